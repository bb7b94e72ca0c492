// kgdb rules compile hypertension.rules --dialect neo4j --label Patient
// Dialect: neo4j. Values are parameters (shown above each statement).

// ==== Materialise (kgdb rules apply): run in this order; each statement is idempotent.
// -- 1. concept node DiseaseSeverity/'Grade 1 Hypertension'
// params: {"concept_id": "DiseaseSeverity/Grade 1 Hypertension", "concept_name": "Grade 1 Hypertension", "created_by": "kgdb rules"}
MERGE (c:`Concept` {id: $concept_id})
ON CREATE SET c.name = $concept_name, c.createdBy = $created_by, c:`DiseaseSeverity`
WITH c
WHERE NOT c:`DiseaseSeverity`
SET c:`DiseaseSeverity`;

// -- 2. remove stale conclusions of DiseaseSeverity/'Grade 1 Hypertension'
// params: {"concept_id": "DiseaseSeverity/Grade 1 Hypertension", "predicate": "belongTo", "v1": 140, "v2": 90, "v3": 160, "v4": 100}
MATCH (n)-[r]->(c:`Concept` {id: $concept_id})
WHERE r.ruleset IS NOT NULL AND (type(r) <> $predicate OR NOT n:`Patient`
  OR NOT ((coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)) AND (NOT coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false))))
DELETE r
RETURN count(*) AS removed;

// -- 3. conclude DiseaseSeverity/'Grade 1 Hypertension' on :Patient
// params: {"concept_id": "DiseaseSeverity/Grade 1 Hypertension", "evaluated_at": "<set by kgdb rules apply>", "rule": "Define (DiseaseSeverity/'Grade 1 Hypertension') { SystolicPressure >= 140 OR DiastolicPressure >= 90 }", "ruleset": "hypertension", "v1": 140, "v2": 90, "v3": 160, "v4": 100}
MATCH (c:`Concept` {id: $concept_id})
MATCH (n:`Patient`)
WHERE (coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)) AND (NOT coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false))
MERGE (n)-[r:`belongTo`]->(c)
SET r.rule = $rule, r.ruleset = $ruleset, r.evaluatedAt = $evaluated_at
RETURN count(r) AS conclusions;

// -- 4. concept node DiseaseSeverity/'Grade 2 Hypertension'
// params: {"concept_id": "DiseaseSeverity/Grade 2 Hypertension", "concept_name": "Grade 2 Hypertension", "created_by": "kgdb rules"}
MERGE (c:`Concept` {id: $concept_id})
ON CREATE SET c.name = $concept_name, c.createdBy = $created_by, c:`DiseaseSeverity`
WITH c
WHERE NOT c:`DiseaseSeverity`
SET c:`DiseaseSeverity`;

// -- 5. remove stale conclusions of DiseaseSeverity/'Grade 2 Hypertension'
// params: {"concept_id": "DiseaseSeverity/Grade 2 Hypertension", "predicate": "belongTo", "v1": 160, "v2": 100}
MATCH (n)-[r]->(c:`Concept` {id: $concept_id})
WHERE r.ruleset IS NOT NULL AND (type(r) <> $predicate OR NOT n:`Patient`
  OR NOT (coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)))
DELETE r
RETURN count(*) AS removed;

// -- 6. conclude DiseaseSeverity/'Grade 2 Hypertension' on :Patient
// params: {"concept_id": "DiseaseSeverity/Grade 2 Hypertension", "evaluated_at": "<set by kgdb rules apply>", "rule": "Define (DiseaseSeverity/'Grade 2 Hypertension') { SystolicPressure >= 160 OR DiastolicPressure >= 100 }", "ruleset": "hypertension", "v1": 160, "v2": 100}
MATCH (c:`Concept` {id: $concept_id})
MATCH (n:`Patient`)
WHERE coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)
MERGE (n)-[r:`belongTo`]->(c)
SET r.rule = $rule, r.ruleset = $ruleset, r.evaluatedAt = $evaluated_at
RETURN count(r) AS conclusions;

// -- 7. concept node Disease/'Hypertension'
// params: {"concept_id": "Disease/Hypertension", "concept_name": "Hypertension", "created_by": "kgdb rules"}
MERGE (c:`Concept` {id: $concept_id})
ON CREATE SET c.name = $concept_name, c.createdBy = $created_by, c:`Disease`
WITH c
WHERE NOT c:`Disease`
SET c:`Disease`;

// -- 8. remove stale conclusions of Disease/'Hypertension'
// params: {"concept_id": "Disease/Hypertension", "predicate": "belongTo", "v1": 140, "v2": 90, "v3": 160, "v4": 100}
MATCH (n)-[r]->(c:`Concept` {id: $concept_id})
WHERE r.ruleset IS NOT NULL AND (type(r) <> $predicate OR NOT n:`Patient`
  OR NOT (coalesce((coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)) OR (coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false)), false)))
DELETE r
RETURN count(*) AS removed;

// -- 9. conclude Disease/'Hypertension' on :Patient
// params: {"concept_id": "Disease/Hypertension", "evaluated_at": "<set by kgdb rules apply>", "rule": "Define (Disease/'Hypertension') { DiseaseSeverity/'Grade 1 Hypertension' OR DiseaseSeverity/'Grade 2 Hypertension' }", "ruleset": "hypertension", "v1": 140, "v2": 90, "v3": 160, "v4": 100}
MATCH (c:`Concept` {id: $concept_id})
MATCH (n:`Patient`)
WHERE coalesce((coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)) OR (coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false)), false)
MERGE (n)-[r:`belongTo`]->(c)
SET r.rule = $rule, r.ruleset = $ruleset, r.evaluatedAt = $evaluated_at
RETURN count(r) AS conclusions;

// -- 10. remove conclusions of deleted rules
// params: {"concept_ids": ["DiseaseSeverity/Grade 1 Hypertension", "DiseaseSeverity/Grade 2 Hypertension", "Disease/Hypertension"], "ruleset": "hypertension"}
MATCH ()-[r]->(c:`Concept`)
WHERE r.ruleset = $ruleset AND NOT c.id IN $concept_ids
DELETE r
RETURN count(*) AS removed;

// -- 11. remove orphaned concept nodes
// params: {"created_by": "kgdb rules"}
MATCH (c:`Concept`)
WHERE c.createdBy = $created_by AND NOT (c)--()
DELETE c
RETURN count(*) AS removed;

// ==== Ask time (kgdb rules eval): read-only, judges the map $facts.
// params: {"concept_0": "DiseaseSeverity/Grade 1 Hypertension", "concept_1": "DiseaseSeverity/Grade 2 Hypertension", "concept_2": "Disease/Hypertension", "facts": {}, "v1": 140, "v2": 90, "v3": 160, "v4": 100}
WITH $facts AS n
UNWIND [
  {concept: $concept_0, holds: (coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)) AND (NOT coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false))},
  {concept: $concept_1, holds: coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false)},
  {concept: $concept_2, holds: coalesce((coalesce((n.`SystolicPressure` >= $v1) OR (n.`DiastolicPressure` >= $v2), false)) OR (coalesce((n.`SystolicPressure` >= $v3) OR (n.`DiastolicPressure` >= $v4), false)), false)}
] AS conclusion
WITH conclusion WHERE conclusion.holds
RETURN conclusion.concept AS concept;
