// note: compiled without a database: names are matched exactly as written, relations are used as relationship types as written, type hints are ignored (use --link to link them through the graph)
// steps 1: match (Cypher)
MATCH (n0:`Entity`)-[r0:`directed_by`]->(n1:`Entity`)
WHERE n0.name = $n0_name
WITH DISTINCT n0, n1, r0
LIMIT $max_rows
RETURN n0.id AS n0_id, n0.name AS n0_name, n1.id AS n1_id, n1.name AS n1_name, type(r0) AS r0_type;
// params: {"n0_name": "Kismet", "max_rows": 10000}
// steps 2: output (Python: returns bound values)
