-- machine.online / machine.offline carry the machine as the API shows it, its environments
-- (0027) included.
create or replace function machine_events() returns trigger language plpgsql as $$
begin
  if (old.status = 'offline') <> (new.status = 'offline') then
    insert into events (tenant_id, type, data) values (new.tenant_id,
      case when new.status = 'offline' then 'machine.offline' else 'machine.online' end,
      jsonb_build_object('id', new.id, 'tenant_id', new.tenant_id, 'name', new.name, 'description', new.description,
        'status', new.status, 'slots', new.slots, 'kind', to_jsonb(new)->'kind', 'running_jobs', new.running_jobs,
        'is_active', new.is_active, 'environments', to_jsonb(new.environments), 'last_heartbeat_at', event_iso(new.last_heartbeat_at),
        'agent_version', new.agent_version, 'created_at', event_iso(new.created_at), 'updated_at', event_iso(new.updated_at)));
  end if;
  return null;
end $$;
