package rpcwire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		frame   string
		batchOK bool
		code    int64  // 0: accepted
		id      string // of the error response
		keys    string // accepted: the keys, comma-separated
	}{
		{frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, keys: "n1"},
		{frame: ` {"jsonrpc":"2.0","id":1.0,"method":"ping"}` + "\r\n", keys: "n1"},
		{frame: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, keys: "sa"},
		{frame: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, keys: ""},
		{frame: `{"jsonrpc":"2.0","id":7,"result":{}}`, keys: "n7"},
		{frame: `{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`, keys: "n7"},
		{frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, batchOK: true, keys: "n1,n2"},

		{frame: ``, code: CodeParseError, id: "null"},
		{frame: `{"jsonrpc":`, code: CodeParseError, id: "null"},
		{frame: `{} {}`, code: CodeParseError, id: "null"},
		{frame: `"hello"`, code: CodeInvalidRequest, id: "null"},
		{frame: `{"id":3,"method":"ping"}`, code: CodeInvalidRequest, id: "3"},
		{frame: `{"jsonrpc":"1.0","id":3,"method":"ping"}`, code: CodeInvalidRequest, id: "3"},
		{frame: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{frame: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{frame: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{frame: `{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{frame: `{"jsonrpc":"2.0","id":4,"method":5}`, code: CodeInvalidRequest, id: "4"},
		{frame: `{"jsonrpc":"2.0","id":4,"method":""}`, code: CodeInvalidRequest, id: "4"},
		{frame: `{"jsonrpc":"2.0","result":{}}`, code: CodeInvalidRequest, id: "null"},
		{frame: `{"jsonrpc":"2.0","id":5}`, code: CodeInvalidRequest, id: "5"},
		{frame: `{"jsonrpc":"2.0","id":5,"error":"bad"}`, code: CodeInvalidRequest, id: "5"},
		{frame: `{"jsonrpc":"2.0","id":5,"error":{"code":1.5,"message":"x"}}`, code: CodeInvalidRequest, id: "5"},
		{frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: CodeInvalidRequest, id: "null"},
		{frame: `[]`, batchOK: true, code: CodeInvalidRequest, id: "null"},
		{frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2}]`, batchOK: true, code: CodeInvalidRequest, id: "null"},
		{frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1.0,"method":"ping"}]`, batchOK: true, code: CodeInvalidRequest, id: "null"},
	} {
		msgs, _, err := Parse([]byte(c.frame), c.batchOK)
		if c.code == 0 {
			if err != nil {
				t.Errorf("%s: %v, want accepted", c.frame, err)
				continue
			}
			var keys []string
			for _, m := range msgs {
				keys = append(keys, m.Key)
			}
			if got := strings.Join(keys, ","); got != c.keys {
				t.Errorf("%s: keys %q, want %q", c.frame, got, c.keys)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted, want error %d", c.frame, c.code)
			continue
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if e := json.Unmarshal(err.Response(), &resp); e != nil {
			t.Fatalf("%s: response %s: %v", c.frame, err.Response(), e)
		}
		if resp.JSONRPC != "2.0" || resp.Error.Code != c.code || string(resp.ID) != c.id || resp.Error.Message == "" {
			t.Errorf("%s: %s, want code %d with id %s", c.frame, err.Response(), c.code, c.id)
		}
	}
}

func TestParseCancelled(t *testing.T) {
	for frame, want := range map[string]string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}`: "n3",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}}`:            "sr",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`:                           "",
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`:                                       "",
	} {
		msgs, _, err := Parse([]byte(frame), false)
		if err != nil || msgs[0].Cancels != want {
			t.Errorf("%s: %+v %v, want cancels %q", frame, msgs, err, want)
		}
	}
}

func TestInspect(t *testing.T) {
	for _, c := range []struct{ msg, key, version, code string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`, "n1", "2025-11-25", ""},
		{`{"jsonrpc":"2.0","id":"x","result":{"content":[]}}`, "sx", "", ""},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, "", "", ""},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":0,"message":"context canceled"}}`, "n2", "", "-32800"},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":0,"message":"method \"tools/list\" is invalid during session initialization"}}`, "n3", "", "-32600"},
		{`{"jsonrpc":"2.0","id":4,"error":{"code":0,"message":"something"}}`, "n4", "", "-32603"},
		{`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"bad"}}`, "n5", "", "-32602"},
		{`[{"jsonrpc":"2.0","id":6,"result":{}}]`, "", "", ""},
	} {
		o := Inspect([]byte(c.msg))
		if o.Key != c.key || o.ProtocolVersion != c.version {
			t.Errorf("%s: key %q version %q", c.msg, o.Key, o.ProtocolVersion)
		}
		if c.code == "" {
			if string(o.Msg) != c.msg {
				t.Errorf("%s: changed to %s", c.msg, o.Msg)
			}
			continue
		}
		if !strings.Contains(string(o.Msg), `"code":`+c.code) || !json.Valid(o.Msg) {
			t.Errorf("%s: %s, want code %s", c.msg, o.Msg, c.code)
		}
	}
}

func TestCalls(t *testing.T) {
	var c Calls
	a := c.Start("n1")
	if a == nil || c.Start("n1") != nil {
		t.Fatal("Start: a second start of one key must not be tracked")
	}
	c.Cancel("n2") // not in flight: nothing
	if c.End("n2", nil) {
		t.Error("End of an unknown key reported cancelled")
	}
	c.Cancel("n1")
	b := &Call{}
	if c.End("n1", b) {
		t.Error("End with another call ended this one")
	}
	if !c.End("n1", a) || c.End("n1", a) {
		t.Error("End: want cancelled once, then unknown")
	}
	c.Start("n1")
	if c.End("n1", nil) {
		t.Error("a new request with a reused id inherited the old cancellation")
	}
}
