"""The SPG-style schema: model, the schema-file parser, and applying a schema to a graph."""

from kgdb.schema.apply import SchemaReport, apply_schema, check_embedding, ensure_base_schema
from kgdb.schema.model import ConceptNode, PropertyDef, RelationDef, Schema, TypeDef, humanize
from kgdb.schema.parser import parse_schema, parse_schema_file

__all__ = [
           "ConceptNode",
           "PropertyDef",
           "RelationDef",
           "Schema",
           "SchemaReport",
           "TypeDef",
           "apply_schema",
           "check_embedding",
           "ensure_base_schema",
           "humanize",
           "parse_schema",
           "parse_schema_file",
]
