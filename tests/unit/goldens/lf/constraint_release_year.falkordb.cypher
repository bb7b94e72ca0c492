// note: compiled without a database: names are matched exactly as written, relations are used as relationship types as written, type hints are ignored (use --link to link them through the graph)
// steps 1, 2: match (Cypher)
MATCH (n0:`Entity`)-[r0:`starred_actors`]->(n1:`Entity`), (n0)-[r1:`release_year`]->(n2:`Entity`)
WHERE n1.name = $n1_name
  AND toFloat(n2.`name`) > $n2_c0
  AND r0 <> r1
WITH DISTINCT n0, n1, n2, r0, r1
LIMIT $max_rows
RETURN n0.id AS n0_id, n0.name AS n0_name, n1.id AS n1_id, n1.name AS n1_name, n2.id AS n2_id, n2.name AS n2_name, type(r0) AS r0_type, type(r1) AS r1_type;
// params: {"n1_name": "Tom Hanks", "n2_c0": 2000, "max_rows": 10000}
// steps 3: output (Python: returns bound values)
