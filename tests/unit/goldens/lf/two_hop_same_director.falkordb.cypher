// note: compiled without a database: names are matched exactly as written, relations are used as relationship types as written, type hints are ignored (use --link to link them through the graph)
// steps 1, 2: match (Cypher)
MATCH (n0:`Entity`)-[r0:`directed_by`]->(n1:`Entity`), (n2:`Entity`)-[r1:`directed_by`]->(n1)
WHERE n0.name = $n0_name
  AND r0 <> r1
WITH DISTINCT n0, n1, n2, r0, r1
LIMIT $max_rows
RETURN n0.id AS n0_id, n0.name AS n0_name, n1.id AS n1_id, n1.name AS n1_name, n2.id AS n2_id, n2.name AS n2_name, type(r0) AS r0_type, type(r1) AS r1_type;
// params: {"n0_name": "Kismet", "max_rows": 10000}
// steps 3: output (Python: returns bound values)
