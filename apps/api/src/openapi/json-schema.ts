import type { TSchema } from '@sinclair/typebox';

/**
 * TypeBox schemas are JSON Schema already; OpenAPI 3.1 speaks JSON Schema 2020-12, so the
 * conversion is small:
 * - TypeBox's symbol keys (Kind, Hint, OptionalKind…) are dropped (a JSON round trip does it);
 * - `anyOf: [X, {type: 'null'}]` from `Nullable(X)` becomes `type: [X.type, 'null']` when X is
 *   a plain typed schema (kept as anyOf when X has enum/const, where null would not match);
 * - a schema with an `$id`, or a `title` that reads like a type name (`ProcessResponse`), is
 *   hoisted into `components.schemas` and referenced, so a shared resource schema is described
 *   once and client generators get its name; `$id` never stays inline, because the same `$id`
 *   twice in one document is an error for strict validators. Two different schemas under one
 *   name: the first keeps the name, the next stays inline (the document is never refused).
 */
export type JsonSchema = Record<string, unknown>;

export class SchemaRegistry {
  readonly components: Record<string, JsonSchema>;

  /** `reserved`: components already in the document (their names are taken). */
  constructor(reserved: Record<string, JsonSchema> = {}) {
    this.components = { ...reserved };
  }

  /** Converts a TypeBox schema into an OpenAPI 3.1 schema, hoisting `$id`-named parts. */
  convert(schema: TSchema | JsonSchema): JsonSchema {
    const plain = JSON.parse(JSON.stringify(schema)) as JsonSchema;
    return this.walk(plain);
  }

  private walk(node: JsonSchema): JsonSchema {
    let out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      out[key] = this.walkValue(key, value);
    }
    out = collapseNullable(out);
    const id = typeof out.$id === 'string' ? out.$id : undefined;
    delete out.$id;
    const name = id ? componentName(id) : typeof out.title === 'string' && TYPE_NAME.test(out.title) ? out.title : undefined;
    if (name) {
      const existing = this.components[name];
      if (!existing || canonical(existing) === canonical(out)) {
        this.components[name] = out;
        return { $ref: `#/components/schemas/${name}` };
      }
    }
    return out;
  }

  private walkValue(key: string, value: unknown): unknown {
    if (Array.isArray(value)) {
      return value.map((v) => (isSchemaObject(v) && key !== 'enum' && key !== 'examples' && key !== 'required' ? this.walk(v) : v));
    }
    if (!isSchemaObject(value)) return value;
    // maps of sub-schemas
    if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'dependentSchemas') {
      const map: JsonSchema = {};
      for (const [k, v] of Object.entries(value)) map[k] = isSchemaObject(v) ? this.walk(v) : v;
      return map;
    }
    // literal values are not schemas
    if (key === 'default' || key === 'const' || key === 'example' || key === 'examples') return value;
    return this.walk(value);
  }
}

function isSchemaObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON text with object keys sorted, so equal schemas compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    isSchemaObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

const TYPE_NAME = /^[A-Z][A-Za-z0-9]*$/;

function componentName(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '_');
}

function collapseNullable(node: JsonSchema): JsonSchema {
  const anyOf = node.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return node;
  const nullIndex = anyOf.findIndex((s) => isSchemaObject(s) && s.type === 'null' && Object.keys(s).length === 1);
  if (nullIndex === -1) return node;
  const other = anyOf[1 - nullIndex] as JsonSchema;
  if (typeof other.type !== 'string' || 'enum' in other || 'const' in other || '$ref' in other) return node;
  const { anyOf: _drop, ...rest } = node;
  for (const k of Object.keys(other)) {
    if (k in rest && k !== 'type') return node; // conflicting annotations: keep the union as is
  }
  return { ...other, ...rest, type: [other.type, 'null'] };
}
