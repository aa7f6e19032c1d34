-- The environments whose assets a machine's runs may read, as an API key has them (null: every
-- one). A robot on a test bench must not read production's credentials.
alter table machines add column environments text[]
  constraint machines_environments_known check (
    environments is null or (cardinality(environments) > 0 and environments <@ array['dev', 'staging', 'production']));
