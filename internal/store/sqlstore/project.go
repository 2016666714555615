package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// ProjectCreate implements store.ProjectTx.
func (t *Tx) ProjectCreate(ctx context.Context, p *continuo.Project) error {
	cj, err := checksJSON(p.Checks)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO projects (id, name, root, checks, writable, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		p.ID, p.Name, p.Root, cj, boolInt(p.Writable), ms(p.CreatedAt))
	return err
}

// ProjectSetChecks implements store.ProjectTx.
func (t *Tx) ProjectSetChecks(ctx context.Context, id string, checks map[string]continuo.Check) error {
	cj, err := checksJSON(checks)
	if err != nil {
		return err
	}
	return t.execOne(ctx, store.ErrNotFound, "UPDATE projects SET checks = ? WHERE id = ?", cj, id)
}

// checksJSON is how a project's checks are stored: a JSON object of check
// name → {command, timeout_secs?, env?}.
func checksJSON(checks map[string]continuo.Check) (string, error) {
	if checks == nil {
		checks = map[string]continuo.Check{}
	}
	b, err := json.Marshal(checks)
	return string(b), err
}

const projectCols = "id, name, root, checks, writable, created_at"

func scanProject(s scanner) (*continuo.Project, error) {
	var p continuo.Project
	var checks string
	var at, writable int64
	if err := s.Scan(&p.ID, &p.Name, &p.Root, &checks, &writable, &at); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(checks), &p.Checks); err != nil {
		return nil, err
	}
	p.Writable = writable != 0
	p.CreatedAt = fromMS(at)
	return &p, nil
}

// ProjectGet implements store.ProjectTx.
func (t *Tx) ProjectGet(ctx context.Context, id string) (*continuo.Project, error) {
	p, err := scanProject(t.row(ctx, "SELECT "+projectCols+" FROM projects WHERE id = ?", id))
	return p, t.interpret(err)
}

// ProjectGetByName implements store.ProjectTx.
func (t *Tx) ProjectGetByName(ctx context.Context, name string) (*continuo.Project, error) {
	p, err := scanProject(t.row(ctx, "SELECT "+projectCols+" FROM projects WHERE name = ?", name))
	return p, t.interpret(err)
}

// ProjectList implements store.ProjectTx.
func (t *Tx) ProjectList(ctx context.Context) ([]continuo.Project, error) {
	return list(t, ctx, scanProject, "SELECT "+projectCols+" FROM projects ORDER BY name")
}

// GrantSet implements store.ProjectTx.
func (t *Tx) GrantSet(ctx context.Context, g continuo.Grant) error {
	_, err := t.exec(ctx, `INSERT INTO grants (project_id, group_id, access) VALUES (?, ?, ?)
		ON CONFLICT (project_id, group_id) DO UPDATE SET access = excluded.access`, g.ProjectID, g.GroupID, string(g.Access))
	return err
}

// GrantGet implements store.ProjectTx.
func (t *Tx) GrantGet(ctx context.Context, projectID, groupID string) (continuo.Access, error) {
	var a string
	err := t.row(ctx, "SELECT access FROM grants WHERE project_id = ? AND group_id = ?", projectID, groupID).Scan(&a)
	return continuo.Access(a), t.interpret(err)
}

func scanGrant(s scanner) (*continuo.Grant, error) {
	var g continuo.Grant
	var a string
	if err := s.Scan(&g.ProjectID, &g.GroupID, &a); err != nil {
		return nil, err
	}
	g.Access = continuo.Access(a)
	return &g, nil
}

// GrantDelete implements store.ProjectTx.
func (t *Tx) GrantDelete(ctx context.Context, projectID, groupID string) error {
	return t.execOne(ctx, store.ErrNotFound, "DELETE FROM grants WHERE project_id = ? AND group_id = ?", projectID, groupID)
}

// ProjectDelete implements store.ProjectTx. Children go before their
// parents (the foreign keys check each statement): evidence and events,
// then runs, then grants.
func (t *Tx) ProjectDelete(ctx context.Context, id string) error {
	for _, q := range []string{"DELETE FROM evidence WHERE run_id IN (SELECT id FROM runs WHERE project_id = ?)",
		"DELETE FROM run_events WHERE run_id IN (SELECT id FROM runs WHERE project_id = ?)", "DELETE FROM runs WHERE project_id = ?",
		"DELETE FROM grants WHERE project_id = ?"} {
		if _, err := t.exec(ctx, q, id); err != nil {
			return err
		}
	}
	return t.execOne(ctx, store.ErrNotFound, "DELETE FROM projects WHERE id = ?", id)
}

// GrantList implements store.ProjectTx.
func (t *Tx) GrantList(ctx context.Context, groupID string) ([]continuo.Grant, error) {
	return list(t, ctx, scanGrant, "SELECT project_id, group_id, access FROM grants WHERE group_id = ? ORDER BY project_id", groupID)
}
