package swarm

import "context"

// PlanPass runs one planner pass (the reaper's loop runs it in the
// server).
func PlanPass(ctx context.Context, s *Service) error { return s.planPass(ctx) }
