// What a report's head states and bounds, apart from its schema (schema.ts): an audit writes its
// report without building the schema.
export const SCHEMA_VERSION = 1;
/** The most shards a fleet audit is cut into (`audit --shard k/n`, `plan-shards`). */
export const MAX_SHARDS = 256;
