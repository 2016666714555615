-- 0013: a swarm's tasks over time (the dashboard's chart, TaskTimeline):
-- the tasks dispatched and the tasks settled in a time window, each a
-- count over a range of an index, so that it costs the tasks of the window
-- and not every task of the swarm. No table changes.
CREATE INDEX tasks_created ON tasks (swarm_id, created_at);
CREATE INDEX tasks_ended ON tasks (swarm_id, ended_at) WHERE ended_at IS NOT NULL;
