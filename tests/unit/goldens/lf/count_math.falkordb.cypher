// note: compiled without a database: names are matched exactly as written, relations are used as relationship types as written, type hints are ignored (use --link to link them through the graph)
// steps 1: match (Cypher)
MATCH (n0:`Entity`)-[r0:`starred_actors`]->(n1:`Entity`)
WHERE n1.name = $n1_name
WITH DISTINCT n0, n1, r0
LIMIT $max_rows
RETURN n0.id AS n0_id, n0.name AS n0_name, n1.id AS n1_id, n1.name AS n1_name, type(r0) AS r0_type;
// params: {"n1_name": "Tom Hanks", "max_rows": 10000}
// steps 2: count (Cypher)
MATCH (n0:`Entity`)-[r0:`starred_actors`]->(n1:`Entity`)
WHERE n0.id IN $bound_n0
  AND n1.id IN $bound_n1
WITH DISTINCT n0, n1, r0
RETURN count(DISTINCT n0) AS value;
// params: {"bound_n0": "<ids bound to s1 at run time>", "bound_n1": "<ids bound to o1 at run time>"}
// steps 3: math (Python: arithmetic over bound values by kgdb's safe evaluator)
// steps 4: math (Python: arithmetic over bound values by kgdb's safe evaluator)
// steps 5: output (Python: returns bound values)
