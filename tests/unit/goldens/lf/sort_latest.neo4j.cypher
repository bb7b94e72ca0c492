// note: compiled without a database: names are matched exactly as written, relations are used as relationship types as written, type hints are ignored (use --link to link them through the graph)
// steps 1, 2: match (Cypher)
MATCH (n0:`Entity`)-[r0:`directed_by`]->(n1:`Entity`), (n0)-[r1:`release_year`]->(n2:`Entity`)
WHERE n1.name = $n1_name
  AND r0 <> r1
WITH DISTINCT n0, n1, n2, r0, r1
LIMIT $max_rows
RETURN n0.id AS n0_id, n0.name AS n0_name, n1.id AS n1_id, n1.name AS n1_name, n2.id AS n2_id, n2.name AS n2_name, type(r0) AS r0_type, type(r1) AS r1_type;
// params: {"n1_name": "Robert Zemeckis", "max_rows": 10000}
// steps 3: sort (Cypher)
MATCH (n0:`Entity`)-[r0:`directed_by`]->(n1:`Entity`), (n0)-[r1:`release_year`]->(n2:`Entity`)
WHERE n0.id IN $bound_n0
  AND n1.id IN $bound_n1
  AND n2.id IN $bound_n2
  AND r0 <> r1
WITH DISTINCT n0, n1, n2, r0, r1
WITH n0, max(toFloat(n2.`name`)) AS num_key, max(n2.`name`) AS text_key
ORDER BY CASE WHEN num_key IS NULL THEN 1 ELSE 0 END ASC, num_key DESC, text_key DESC, n0.id ASC
LIMIT $limit
RETURN n0.id AS n0_id, n0.name AS n0_name, coalesce(num_key, text_key) AS sort_key;
// params: {"bound_n0": "<ids bound to s1 at run time>", "bound_n1": "<ids bound to o1 at run time>", "bound_n2": "<ids bound to o2 at run time>", "limit": 1}
// steps 4: output (Python: returns bound values)
