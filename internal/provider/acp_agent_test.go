//go:build linux

package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// A Go ACP agent on acp-go-sdk's agent side, for what the TypeScript agent
// cannot do on the stable v1 API: report usage, ask for the file system and
// a terminal it was not offered, answer with a stop reason or a protocol
// version that does not exist. It is this test binary, re-executed with
// goAgentEnv=1 (init runs it before any test); what it does in a turn is
// the prompt's first word; goAgentVersionEnv=2 makes it answer initialize
// with protocol version 2.

const (
	goAgentEnv        = "CONTINUO_ACP_GO_AGENT"
	goAgentVersionEnv = "CONTINUO_ACP_GO_AGENT_VERSION"
)

func init() {
	if os.Getenv(goAgentEnv) != "1" {
		return
	}
	a := &goAgent{}
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	<-a.conn.Done()
	os.Exit(0)
}

type goAgent struct{ conn *acp.AgentSideConnection }

func (a *goAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	v := acp.ProtocolVersion(acp.ProtocolVersionNumber)
	if os.Getenv(goAgentVersionEnv) == "2" {
		v = 2
	}
	return acp.InitializeResponse{ProtocolVersion: v, AuthMethods: []acp.AuthMethod{}}, nil
}

func (a *goAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "go-session"}, nil
}

func (a *goAgent) say(ctx context.Context, sid acp.SessionId, s string) {
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(s)})
}

func acpCode(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return fmt.Sprintf("error %d", re.Code)
	}
	return fmt.Sprintf("%v", err)
}

func (a *goAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	word := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		word, _, _ = strings.Cut(p.Prompt[0].Text.Text, " ")
	}
	sid := p.SessionId
	switch word {
	case "usage":
		a.say(ctx, sid, "counted")
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: &acp.Usage{InputTokens: 11, OutputTokens: 7, TotalTokens: 18}}, nil
	case "fs":
		_, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: "/etc/hostname"})
		a.say(ctx, sid, "read: "+acpCode(err)+"\n")
		_, err = a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: "/tmp/x", Content: "x"})
		a.say(ctx, sid, "write: "+acpCode(err)+"\n")
		_, err = a.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: sid, Command: "sh"})
		a.say(ctx, sid, "terminal: "+acpCode(err)+"\n")
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	case "nokind":
		resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
			SessionId: sid,
			ToolCall:  acp.ToolCallUpdate{ToolCallId: "mystery", Title: acp.Ptr("Mystery")},
			Options: []acp.PermissionOption{
				{OptionId: "yes", Name: "Yes", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "no", Name: "No", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		switch {
		case err != nil:
			a.say(ctx, sid, "told: "+acpCode(err)+"\n")
		case resp.Outcome.Selected != nil:
			a.say(ctx, sid, "told: "+string(resp.Outcome.Selected.OptionId)+"\n")
		default:
			a.say(ctx, sid, "told: cancelled\n")
		}
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	case "unknownstop":
		return acp.PromptResponse{StopReason: "paused"}, nil
	}
	return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"prompt": "unknown script"})
}

func (a *goAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}
func (a *goAgent) Cancel(context.Context, acp.CancelNotification) error { return nil }
func (a *goAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}
func (a *goAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}
func (a *goAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}
func (a *goAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}
func (a *goAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

// goProvider is an acp provider running the Go agent, with every tool kind
// allowed.
func goProvider(t *testing.T, extra ...string) Provider {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	all := make([]string, len(acpToolKinds))
	for i, k := range acpToolKinds {
		all[i] = string(k)
	}
	return mustACP(t, Config{ID: "go-acp", Kind: KindACP, Command: []string{exe}, Env: append([]string{goAgentEnv + "=1"}, extra...), AllowTools: all})
}

func TestACPUsage(t *testing.T) {
	r, s := acpRun(t, goProvider(t), "usage")
	if r.ErrorKind != "" || r.Stopped || r.Usage == nil || *r.Usage != (Usage{InputTokens: 11, OutputTokens: 7, TotalTokens: 18}) {
		t.Errorf("Result %+v (usage %+v)", r, r.Usage)
	}
	if s.text() != "counted" {
		t.Errorf("text %q", s.text())
	}
}

func TestACPRefusesFilesAndTerminals(t *testing.T) {
	r, s := acpRun(t, goProvider(t), "fs")
	if r != (Result{}) {
		t.Fatalf("Result %+v", r)
	}
	if want := "read: error -32601\nwrite: error -32601\nterminal: error -32601\n"; s.text() != want {
		t.Errorf("the agent was told\n%s\nwant\n%s", s.text(), want)
	}
	want := []string{
		"rejected fs/read_text_file (not offered to the agent)",
		"rejected fs/write_text_file (not offered to the agent)",
		"rejected terminal/create (not offered to the agent)",
	}
	if got := s.events("permission"); !slices.Equal(got, want) {
		t.Errorf("permission events %q, want %q", got, want)
	}
}

func TestACPPermissionWithoutKind(t *testing.T) {
	// Every kind is allowed, but the request names none: rejected.
	r, s := acpRun(t, goProvider(t), "nokind")
	if r != (Result{}) {
		t.Fatalf("Result %+v", r)
	}
	if s.text() != "told: no\n" {
		t.Errorf("the agent was told %q", s.text())
	}
	if got, want := s.events("permission"), []string{"rejected (no kind) Mystery"}; !slices.Equal(got, want) {
		t.Errorf("permission events %q, want %q", got, want)
	}
}

func TestACPProtocolViolations(t *testing.T) {
	if r, _ := acpRun(t, goProvider(t), "unknownstop"); r != (Result{ErrorKind: "protocol_error"}) {
		t.Errorf("unknown stop reason: %+v", r)
	}
	v2 := goProvider(t, goAgentVersionEnv+"=2")
	if r, s := acpRun(t, v2, "usage"); r != (Result{ErrorKind: "protocol_error"}) || len(s.calls) != 0 {
		t.Errorf("protocol version 2: %+v, %q", r, s.calls)
	}
	if err := v2.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "speaks ACP protocol version 2, not 1") {
		t.Errorf("Check of protocol version 2: %v", err)
	}
	if err := goProvider(t).Check(context.Background()); err != nil {
		t.Errorf("Check: %v", err)
	}
}
