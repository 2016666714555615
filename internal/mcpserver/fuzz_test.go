package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The fuzz targets feed arbitrary bytes to decode. Whatever the bytes,
// decode must not panic; a success must satisfy every bound (checked here
// independently of the struct tags); a failure must be a contract error,
// invalid_input or too_large.

// The allowed values come from their sources (the root package's closed
// sets, the workflow package's material keys), not from enumSets.
var (
	kindsEnum     = strs(continuo.Kinds())
	listKindsEnum = strs(continuo.ListKinds())
	orderEnum     = strs(continuo.Orders())
	statusEnum    = strs(continuo.Statuses())
	priorityEnum  = strs(continuo.Priorities())
	modeEnum      = strs(continuo.Modes())
	contextEnum   = []string{workflow.MaterialProjectInstructions, workflow.MaterialWorkflowGuide}
	lifecycleEnum = strs(continuo.Lifecycles())
	goalLifecycle = strs(continuo.GoalLifecycles())
	goalEndEnum   = []string{string(continuo.GoalCompleted), string(continuo.GoalCancelled)}
)

// TestEnumSets checks that every enum tag's set, as validated and as
// published in the input schema, is its source's list in its order.
func TestEnumSets(t *testing.T) {
	want := map[string][]string{"kind": kindsEnum, "status": statusEnum, "priority": priorityEnum,
		"mode": modeEnum, "material": contextEnum, "lifecycle": lifecycleEnum,
		"listkind": listKindsEnum, "order": orderEnum, "goallifecycle": goalLifecycle, "goalend": goalEndEnum,
		"decision":  {"requeue", "failed", "result_ready"},
		"taskstate": strs(continuo.TaskStates()), "disposition": {"no_effect", "applied", "unknown"}, "effect": {"none", "unknown"},
		"contdecision": {"no_effect", "applied"}, "reportsource": {"host_exact", "estimate"},
		"nextstate": {"task", "idle", "compact_required", "continued", "closed"}, "runtime": {"manual", "process"}}
	if len(enumSets) != len(want) {
		t.Errorf("enumSets has %d sets, want %d", len(enumSets), len(want))
	}
	for name, w := range want {
		if !slices.Equal(enumSets[name], w) {
			t.Errorf("enumSets[%q] = %v, want %v", name, enumSets[name], w)
		}
	}
	enum := func(vs []any) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i], _ = v.(string)
		}
		return out
	}
	for _, c := range []struct {
		prop string
		got  []any
		want []string
	}{
		{"post kind", inputSchema[PostSessionMessageArgs]().Properties["kind"].Enum, kindsEnum},
		{"post priority", inputSchema[PostSessionMessageArgs]().Properties["priority"].Enum, priorityEnum},
		{"list kinds", inputSchema[ListSessionMessagesArgs]().Properties["kinds"].Items.Enum, listKindsEnum},
		{"list order", inputSchema[ListSessionMessagesArgs]().Properties["order"].Enum, orderEnum},
		{"list status", inputSchema[ListSessionMessagesArgs]().Properties["status"].Enum, statusEnum},
		{"work mode", inputSchema[WorkOnProjectArgs]().Properties["mode"].Enum, modeEnum},
		{"work context", inputSchema[WorkOnProjectArgs]().Properties["context"].Items.Enum, contextEnum},
		{"sessions lifecycle", inputSchema[ListSessionsArgs]().Properties["lifecycle"].Enum, lifecycleEnum},
	} {
		if got := enum(c.got); !slices.Equal(got, c.want) {
			t.Errorf("schema of %s: enum %v, want %v", c.prop, got, c.want)
		}
	}
	_, err := decode[PostSessionMessageArgs]([]byte(`{"session_id":"~s1","kind":"opinion","text":"x"}`))
	if want := "invalid_input: kind: must be one of " + strings.Join(kindsEnum, ", "); err == nil || err.Error() != want {
		t.Errorf("bad kind: %v, want %s", err, want)
	}
}

// violations collects bound violations of a decoded value.
type violations []string

func (v *violations) str(name, s string, required bool, max int) {
	if s == "" {
		if required {
			*v = append(*v, name+" is required but empty")
		}
		return
	}
	if len(s) > max {
		*v = append(*v, name+" too long")
	}
}

func (v *violations) enum(name, s string, required bool, allowed []string) {
	if s == "" && !required {
		return
	}
	if !slices.Contains(allowed, s) {
		*v = append(*v, name+" not in enum: "+s)
	}
}

func (v *violations) list(name string, xs []string, maxItems, each int, allowed []string) {
	if len(xs) > maxItems {
		*v = append(*v, name+" has too many items")
	}
	for _, x := range xs {
		if x == "" || len(x) > each {
			*v = append(*v, name+" item out of bounds")
		}
		if allowed != nil && !slices.Contains(allowed, x) {
			*v = append(*v, name+" item not in enum: "+x)
		}
	}
}

func (v *violations) num(name string, n, lo, hi int) {
	if n < lo || n > hi {
		*v = append(*v, name+" out of range")
	}
}

// optNum checks an optional number: absent (nil) is fine.
func (v *violations) optNum(name string, n *int, lo, hi int) {
	if n != nil {
		v.num(name, *n, lo, hi)
	}
}

func checkPost(in *PostSessionMessageArgs) violations {
	var v violations
	v.str("session_id", in.SessionID, true, 64)
	v.enum("kind", in.Kind, true, kindsEnum)
	v.str("text", in.Text, true, 8000)
	v.str("delivery_key", in.DeliveryKey, false, 128)
	v.str("supersedes", in.Supersedes, false, 64)
	v.str("reply_to", in.ReplyTo, false, 64)
	v.list("tags", in.Tags, 16, 64, nil)
	v.enum("priority", in.Priority, false, priorityEnum)
	return v
}

func checkWorkOn(in *WorkOnProjectArgs) violations {
	var v violations
	v.str("project", in.Project, false, 128)
	v.str("session_id", in.SessionID, false, 64)
	v.str("instruction", in.Instruction, true, 16384)
	v.str("title", in.Title, false, 240)
	v.enum("mode", in.Mode, false, modeEnum)
	v.list("context", in.Context, 2, 64, contextEnum)
	return v
}

func checkListMessages(in *ListSessionMessagesArgs) violations {
	var v violations
	v.str("session_id", in.SessionID, true, 64)
	v.list("kinds", in.Kinds, 8, 16, kindsEnum)
	v.enum("status", in.Status, false, statusEnum)
	v.str("cursor", in.Cursor, false, 64)
	v.optNum("limit", in.Limit, 1, 100)
	return v
}

func checkListSessions(in *ListSessionsArgs) violations {
	var v violations
	v.str("project", in.Project, true, 128)
	v.enum("lifecycle", in.Lifecycle, false, lifecycleEnum)
	v.num("offset", in.Offset, 0, 1000000)
	v.optNum("limit", in.Limit, 1, 50)
	return v
}

func checkClose(in *CloseSessionArgs) violations {
	var v violations
	v.str("session_id", in.SessionID, true, 64)
	v.str("summary", in.Summary, false, 8000)
	return v
}

func checkResolve(in *ResolveSessionMessageArgs) violations {
	var v violations
	v.str("session_id", in.SessionID, true, 64)
	v.str("message_id", in.MessageID, true, 64)
	v.str("resolution", in.Resolution, false, 8000)
	return v
}

func checkHandoff(in *ReadSessionHandoffArgs) violations {
	var v violations
	v.str("session_id", in.SessionID, true, 64)
	v.str("project", in.Project, false, 128)
	return v
}

// fieldRE is what details.field may look like: an argument name, or an
// item of one ("tags[3]"), or a path to a nested one ("tasks[3].prompt",
// "next.wait_secs").
var fieldRE = regexp.MustCompile(`^[^\[\].]+(\[[0-9]+\])?(\.[^\[\].]+(\[[0-9]+\])?)*$`)

// checkDecode decodes raw as In and checks the outcome.
func checkDecode[In any](t *testing.T, raw []byte, check func(*In) violations) {
	t.Helper()
	in, err := decode[In](raw)
	if err != nil {
		var e *continuo.Error
		if !errors.As(err, &e) {
			t.Fatalf("decode(%q): error %T %v is not a *continuo.Error", raw, err, err)
		}
		if e.Code != continuo.CodeInvalidInput && e.Code != continuo.CodeTooLarge {
			t.Fatalf("decode(%q): code %s, want invalid_input or too_large", raw, e.Code)
		}
		if in != nil {
			t.Fatalf("decode(%q): a value with an error", raw)
		}
		if f, ok := e.Details["field"]; ok {
			s, isString := f.(string)
			// An unknown argument is named as sent (even ""); every other
			// field is an argument name, or an item of one.
			unknown := strings.HasSuffix(e.Message, ": unknown argument")
			if !isString || (!unknown && !fieldRE.MatchString(s)) {
				t.Fatalf("decode(%q): details.field = %q", raw, f)
			}
		}
		if e.Message == "" {
			t.Fatalf("decode(%q): empty message", raw)
		}
		return
	}
	if in == nil {
		t.Fatalf("decode(%q): nil value without an error", raw)
	}
	if v := check(in); len(v) > 0 {
		t.Fatalf("decode(%q) accepted %+v, which violates: %v", raw, *in, v)
	}
	// A decoded value re-encodes to arguments that decode to the same value.
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", *in, err)
	}
	again, err := decode[In](b)
	if err != nil {
		t.Fatalf("decode(%q) accepted, but its re-encoding %s is refused: %v", raw, b, err)
	}
	b2, _ := json.Marshal(again)
	if string(b) != string(b2) {
		t.Fatalf("round trip changed the value: %s → %s", b, b2)
	}
}

var seedsCommon = []string{
	``, `null`, ` `, `{}`, `[]`, `[1,2]`, `"x"`, `42`, `true`, `{"a":1}`, `{} {}`, `{}x`, `{`, `{"bogus":1}`,
	"\xff\xfe", `{"text":"\xff"}`, `{"session_id":null}`, `{"":""}`, `{"a\"b":1}`,
}

var seedsPost = []string{
	`{"session_id":"~s1","kind":"note","text":"hello"}`,
	`{"session_id":"ses_01J0000000000000000000000","kind":"decision","text":"x","delivery_key":"k","tags":["a","b"],"priority":"high"}`,
	`{"session_id":"~s1","kind":"note","text":"x","supersedes":"msg_01J0000000000000000000000","reply_to":"msg_01J0000000000000000000001"}`,
	`{"session_id":"~s1","kind":"opinion","text":"x"}`,
	`{"session_id":"~s1","kind":"note","text":5}`,
	`{"session_id":"~s1","kind":"note","text":""}`,
	`{"session_id":"~s1","kind":"note","text":"x","tags":["","a"]}`,
	`{"session_id":"~s1","kind":"note","text":"x","tags":[1]}`,
	`{"session_id":"~s1","kind":"note","text":"x","tags":null}`,
	`{"session_id":"~s1","kind":"note","text":"x","priority":"urgent"}`,
	`{"SESSION_ID":"~s1","Kind":"note","TEXT":"case"}`,
	`{"session_id":"~s1","kind":"note","text":"a","text":"b"}`,
	`{"session_id":"~s1","kind":"note","text":"\u0000\ud800<>&"}`,
	`{"session_id":"~s1","kind":"note","text":"` + strings.Repeat("€", 2667) + `"}`,
	`{"session_id":"~s1","kind":"note","text":"x","tags":["` + strings.Repeat("t", 65) + `"]}`,
}

var seedsWorkOn = []string{
	`{"instruction":"do it"}`,
	`{"project":"prj_01J0000000000000000000000","instruction":"x","title":"t","mode":"worktree","context":["workflow.guide","project.instructions"]}`,
	`{"session_id":"~s2","instruction":"resume"}`,
	`{"instruction":"x","mode":"sandbox"}`,
	`{"instruction":"x","context":["secrets"]}`,
	`{"instruction":"x","context":["workflow.guide","workflow.guide","workflow.guide"]}`,
	`{"instruction":"x","context":"workflow.guide"}`,
	`{"instruction":"x","title":"` + strings.Repeat("t", 241) + `"}`,
	`{"instruction":""}`,
	`{"instruction":["x"]}`,
}

var seedsListMessages = []string{
	`{"session_id":"~s1"}`,
	`{"session_id":"~s1","kinds":["todo","risk"],"status":"open","cursor":"c5.abcdef01","limit":100}`,
	`{"session_id":"~s1","limit":101}`,
	`{"session_id":"~s1","limit":-1}`,
	`{"session_id":"~s1","limit":1e2}`,
	`{"session_id":"~s1","limit":1.5}`,
	`{"session_id":"~s1","limit":99999999999999999999}`,
	`{"session_id":"~s1","kinds":["todo","todo","todo","todo","todo","todo","todo","todo","todo"]}`,
	`{"session_id":"~s1","kinds":["bogus"]}`,
	`{"session_id":"~s1","status":"closed"}`,
}

// The swarm's argument forms of the one-call protocol: a batch dispatch,
// next with ack, submit with next, collect of the ready results, leave
// and remove_worker.

func checkDispatch(in *SwarmDispatchArgs) violations {
	var v violations
	v.str("swarm_id", in.SwarmID, true, 64)
	v.str("task_key", in.TaskKey, false, 128)
	v.str("prompt", in.Prompt, false, 65536)
	v.str("preferred_worker_id", in.PreferredWorkerID, false, 64)
	if in.Tasks != nil && (len(in.Tasks) < 1 || len(in.Tasks) > 100) && len(in.Tasks) != 0 {
		v = append(v, "tasks has a bad number of items")
	}
	for i, it := range in.Tasks {
		v.str(fmt.Sprintf("tasks[%d].task_key", i), it.TaskKey, true, 128)
		v.str(fmt.Sprintf("tasks[%d].prompt", i), it.Prompt, true, 65536)
		v.str(fmt.Sprintf("tasks[%d].preferred_worker_id", i), it.PreferredWorkerID, false, 64)
	}
	return v
}

func checkWorkerRef(v *violations, workerID string, epoch *int64, key string) {
	v.str("worker_id", workerID, true, 64)
	if epoch == nil || *epoch < 0 || *epoch > 1_000_000_000 {
		*v = append(*v, "epoch missing or out of range")
	}
	if key != "" && (len(key) < 22 || len(key) > 128) {
		*v = append(*v, "carrier_key out of bounds")
	}
}

func checkNext(in *SwarmNextArgs) violations {
	var v violations
	checkWorkerRef(&v, in.WorkerID, in.Epoch, in.CarrierKey)
	v.optNum("wait_secs", in.WaitSecs, 0, 25)
	return v
}

func checkSubmit(in *SwarmSubmitArgs) violations {
	var v violations
	checkWorkerRef(&v, in.WorkerID, in.Epoch, in.CarrierKey)
	v.str("task_id", in.TaskID, true, 64)
	v.str("result", in.Result, true, 262144)
	if in.Next != nil {
		v.optNum("next.wait_secs", in.Next.WaitSecs, 0, 25)
	}
	return v
}

func checkCollect(in *SwarmCollectArgs) violations {
	var v violations
	v.str("swarm_id", in.SwarmID, true, 64)
	v.str("task_id", in.TaskID, false, 64)
	v.optNum("wait_secs", in.WaitSecs, 0, 25)
	v.optNum("limit", in.Limit, 1, 100)
	v.str("idempotency_key", in.IdempotencyKey, false, 128)
	return v
}

func checkLeave(in *SwarmLeaveArgs) violations {
	var v violations
	checkWorkerRef(&v, in.WorkerID, in.Epoch, in.CarrierKey)
	return v
}

func checkRemove(in *SwarmWorkerArgs) violations {
	var v violations
	v.str("swarm_id", in.SwarmID, true, 64)
	v.str("worker_id", in.WorkerID, true, 64)
	return v
}

var seedsSwarm = []string{
	`{"swarm_id":"swm_1","task_key":"k","prompt":"p"}`,
	`{"swarm_id":"swm_1","tasks":[{"task_key":"a","prompt":"p"},{"task_key":"b","prompt":"q","payload":{"n":1},"preferred_worker_id":"wkr_1"}]}`,
	`{"swarm_id":"swm_1","tasks":[]}`,
	`{"swarm_id":"swm_1","tasks":[{"task_key":"a"}]}`,
	`{"swarm_id":"swm_1","tasks":[{"task_key":"a","prompt":"p","bogus":1}]}`,
	`{"swarm_id":"swm_1","tasks":[{"task_key":"","prompt":"p"}]}`,
	`{"swarm_id":"swm_1","tasks":[{"TASK_KEY":"a","prompt":"p"}]}`,
	`{"swarm_id":"swm_1","tasks":"a"}`,
	`{"swarm_id":"swm_1","tasks":[1,2]}`,
	`{"swarm_id":"swm_1","tasks":[null]}`,
	`{"swarm_id":"swm_1","tasks":[{"task_key":"` + strings.Repeat("k", 129) + `","prompt":"p"}]}`,
	`{"worker_id":"wkr_1","epoch":0,"ack":true,"wait_secs":25}`,
	`{"worker_id":"wkr_1","epoch":0,"ack":"yes"}`,
	`{"worker_id":"wkr_1","epoch":3,"task_id":"tsk_1","result":"r","next":{"ack":true,"wait_secs":0}}`,
	`{"worker_id":"wkr_1","epoch":3,"task_id":"tsk_1","result":"r","next":{}}`,
	`{"worker_id":"wkr_1","epoch":3,"task_id":"tsk_1","result":"r","next":{"wait_secs":26}}`,
	`{"worker_id":"wkr_1","epoch":3,"task_id":"tsk_1","result":"r","next":{"bogus":1}}`,
	`{"worker_id":"wkr_1","epoch":3,"task_id":"tsk_1","result":"r","next":null}`,
	`{"worker_id":"wkr_1","epoch":3,"task_id":"tsk_1","result":"r","next":[true]}`,
	`{"swarm_id":"swm_1","wait_secs":25,"limit":100,"idempotency_key":"k"}`,
	`{"swarm_id":"swm_1","limit":0}`,
	`{"swarm_id":"swm_1","task_id":"tsk_1"}`,
	`{"worker_id":"wkr_1","epoch":0,"carrier_key":"` + strings.Repeat("c", 22) + `"}`,
	`{"swarm_id":"swm_1","worker_id":"wkr_1"}`,
}

// FuzzDecodeSwarm feeds the one-call protocol's argument forms, and
// anything else, to their decoders.
func FuzzDecodeSwarm(f *testing.F) {
	addSeeds(f, seedsCommon, seedsSwarm)
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecode(t, raw, checkDispatch)
		checkDecode(t, raw, checkNext)
		checkDecode(t, raw, checkSubmit)
		checkDecode(t, raw, checkCollect)
		checkDecode(t, raw, checkLeave)
		checkDecode(t, raw, checkRemove)
	})
}

func addSeeds(f *testing.F, sets ...[]string) {
	for _, set := range sets {
		for _, s := range set {
			f.Add([]byte(s))
		}
	}
}

func FuzzDecodePost(f *testing.F) {
	addSeeds(f, seedsCommon, seedsPost)
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecode(t, raw, checkPost) })
}

func FuzzDecodeWorkOn(f *testing.F) {
	addSeeds(f, seedsCommon, seedsWorkOn)
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecode(t, raw, checkWorkOn) })
}

func FuzzDecodeListMessages(f *testing.F) {
	addSeeds(f, seedsCommon, seedsListMessages)
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecode(t, raw, checkListMessages) })
}

// FuzzDecodeAll feeds the same bytes to every argument type.
func FuzzDecodeAll(f *testing.F) {
	addSeeds(f, seedsCommon, seedsPost, seedsWorkOn, seedsListMessages, seedsSwarm, []string{
		`{"project":"p","lifecycle":"active","offset":5,"limit":50}`,
		`{"project":"p","limit":51}`,
		`{"project":"p","offset":-1}`,
		`{"session_id":"~s1","summary":"done"}`,
		`{"session_id":"~s1","message_id":"msg_01J0000000000000000000000","resolution":"fixed"}`,
		`{"session_id":"~s1","project":"p","diagnostic":true}`,
		`{"session_id":"~s1","diagnostic":"yes"}`,
	})
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecode(t, raw, checkPost)
		checkDecode(t, raw, checkWorkOn)
		checkDecode(t, raw, checkListMessages)
		checkDecode(t, raw, checkListSessions)
		checkDecode(t, raw, checkClose)
		checkDecode(t, raw, checkResolve)
		checkDecode(t, raw, checkHandoff)
		checkDecode(t, raw, func(*ListProjectsArgs) violations { return nil })
		checkDecode(t, raw, checkDispatch)
		checkDecode(t, raw, checkSubmit)
		checkDecode(t, raw, checkCollect)
	})
}

// TestDecodeCases pins the errors a few inputs get: the field they name
// and the code.
func TestDecodeCases(t *testing.T) {
	cases := []struct {
		raw   string
		code  continuo.Code
		field string
	}{
		{`[]`, continuo.CodeInvalidInput, ""},
		{`{"session_id":"~s1","kind":"note","text":"x"} {}`, continuo.CodeInvalidInput, ""},
		{`{"session_id":"~s1","kind":"note","text":"x"`, continuo.CodeInvalidInput, ""},
		{"{\"session_id\":\"~s1\",\"kind\":\"note\",\"text\":\"\xff\"}", continuo.CodeInvalidInput, ""},
		{`{"session_id":"~s1","kind":"note","text":5}`, continuo.CodeInvalidInput, "text"},
		{`{"session_id":"~s1","kind":"note","text":"x","bogus":1}`, continuo.CodeInvalidInput, "bogus"},
		{`{"session_id":"~s1","kind":"note","TEXT":"x"}`, continuo.CodeInvalidInput, "TEXT"},
		{`{"session_id":"~s1","kind":"note","text":"x","tags":["a","b","c","` + strings.Repeat("x", 65) + `"]}`, continuo.CodeInvalidInput, "tags[3]"},
		{`{"session_id":"~s1","kind":"note","text":"` + strings.Repeat("€", 2667) + `"}`, continuo.CodeInvalidInput, "text"},
		{`{"session_id":"~s1","kind":"note","text":"` + strings.Repeat("x", maxArgs) + `"}`, continuo.CodeTooLarge, ""},
	}
	for _, c := range cases {
		_, err := decode[PostSessionMessageArgs]([]byte(c.raw))
		e := continuo.AsError(err)
		if err == nil || e.Code != c.code {
			t.Errorf("decode(%.60q) = %v, want %s", c.raw, err, c.code)
			continue
		}
		if got, _ := e.Details["field"].(string); got != c.field {
			t.Errorf("decode(%.60q): field %q, want %q", c.raw, got, c.field)
		}
	}
	// Nested arguments are named by their path, and exactly too; a
	// required number is required.
	others := []struct {
		decode func([]byte) error
		raw    string
		field  string
	}{
		{decodeErr[SwarmCreateArgs], `{"worker_limit":2,"policy":{"bogus":1}}`, "policy.bogus"},
		{decodeErr[SwarmCreateArgs], `{"worker_limit":2,"policy":{"LEASE_TTL_SECS":60}}`, "policy.LEASE_TTL_SECS"},
		{decodeErr[SwarmCreateArgs], `{"worker_limit":2,"policy":{"compaction":{"budget_tokens":9,"threshold":0.5,"reserve_tokens":0,"x":1}}}`,
			"policy.compaction.x"},
		{decodeErr[SwarmCreateArgs], `{"worker_limit":2,"policy":{"lease_ttl_secs":"60"}}`, "policy.lease_ttl_secs"},
		{decodeErr[CreateGoalArgs], `{"session_id":"~s1","title":"t","objective":"o","completion_conditions":["c"],"idempotency_key":"k",` +
			`"steps":[{"id":"a","title":"A"},{"id":"b","Title":"B"}]}`, "steps[1].Title"},
		{decodeErr[SwarmNextArgs], `{"worker_id":"wkr_x"}`, "epoch"},
		{decodeErr[SwarmSubmitArgs], `{"worker_id":"wkr_x","epoch":null,"task_id":"tsk_x","result":"r"}`, "epoch"},
		{decodeErr[SwarmReconcileArgs], `{"swarm_id":"swm_x","task_id":"tsk_x","attempt_id":"att_x","decision":"requeue"}`, "evidence"},
	}
	for _, c := range others {
		e := continuo.AsError(c.decode([]byte(c.raw)))
		if got, _ := e.Details["field"].(string); e.Code != continuo.CodeInvalidInput || got != c.field {
			t.Errorf("decode(%.60q) = %v (field %q), want invalid_input naming %s", c.raw, e, got, c.field)
		}
	}
	for _, raw := range []string{``, `null`, "  \n", `{}`} {
		if _, err := decode[ListProjectsArgs]([]byte(raw)); err != nil {
			t.Errorf("decode[ListProjectsArgs](%q) = %v", raw, err)
		}
	}
}

func decodeErr[In any](raw []byte) error {
	_, err := decode[In](raw)
	return err
}
