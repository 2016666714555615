package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// docServer is an HTTPS server of Client ID Metadata Documents, on
// 127.0.0.1 with its own certificate (written to CA as PEM). It counts
// the connections made to it.
type docServer struct {
	*httptest.Server
	CA    string
	conns atomic.Int64
}

func newDocServer(t *testing.T) *docServer {
	t.Helper()
	d := &docServer{}
	mux := http.NewServeMux()
	d.Server = httptest.NewUnstartedServer(mux)
	d.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			d.conns.Add(1)
		}
	}
	d.StartTLS()
	t.Cleanup(d.Close)
	d.CA = filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.Certificate().Raw})
	if err := os.WriteFile(d.CA, b, 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(path string, doc map[string]any) {
		body, _ := json.Marshal(doc)
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		})
	}
	doc := func(clientID string) map[string]any {
		return map[string]any{"client_id": clientID, "client_name": "Go SDK e2e", "redirect_uris": []string{cimdRedirect},
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
			"token_endpoint_auth_method": "none"}
	}
	serve("/client.json", doc(d.URL+"/client.json"))
	serve("/other.json", doc(d.URL+"/client.json")) // names another URL
	big := doc(d.URL + "/big.json")
	big["client_uri"] = "https://example.com/" + strings.Repeat("a", 16<<10) // the document is over 16 KiB
	serve("/big.json", big)
	return d
}

const cimdRedirect = "http://127.0.0.1:8977/callback"

// TestOAuthClientMetadataDocument: the Go SDK's own OAuth client
// (auth.AuthorizationCodeHandler with a Client ID Metadata Document URL)
// connects to a real serve process, which fetches the document over HTTPS
// (trusting the test CA, and loopback, only because of
// CONTINUO_TEST_CLIENT_METADATA_CA); the operator then sees the client as
// kind metadata. Documents that break the rules are refused at the
// authorization endpoint with an error page, never a redirect, and leave
// no client behind: one whose client_id is not its URL, one over 16 KiB,
// and — on a server without the test setting — one on a private address,
// refused before any connection is made to it.
func TestOAuthClientMetadataDocument(t *testing.T) {
	docs := newDocServer(t)
	srv, data := oauthServe(t, "sqlite", "CONTINUO_TEST_CLIENT_METADATA_CA="+docs.CA)
	docURL := docs.URL + "/client.json"

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The handler opens the authorization URL "in the browser" (hands it to
	// the person, this goroutine) and waits for the redirect back.
	opened := make(chan string, 1)
	redirected := make(chan *auth.AuthorizationResult, 1)
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
		RedirectURL:                    cimdRedirect,
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			select {
			case opened <- a.URL:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			select {
			case r := <-redirected:
				return r, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	type connection struct {
		cs  *mcp.ClientSession
		err error
	}
	connected := make(chan connection, 1)
	go func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e-cimd", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, OAuthHandler: h, MaxRetries: -1}, nil)
		connected <- connection{cs, err}
	}()
	var authorize string
	select {
	case authorize = <-opened:
	case c := <-connected:
		t.Fatalf("connect returned without an authorization: %v", c.err)
	case <-ctx.Done():
		t.Fatal("the handler never opened an authorization URL")
	}
	if !strings.HasPrefix(authorize, srv.Issuer+"/oauth/authorize?") || !strings.Contains(authorize, "client_id=https%3A%2F%2F127.0.0.1") {
		t.Fatalf("authorization URL %s", authorize)
	}
	loc := newUserAgent(t, srv.Issuer).approve(authorize, loginCode(t, data, "alice"))
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != cimdRedirect {
		t.Fatalf("redirected to %s", loc)
	}
	q := loc.Query()
	redirected <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	var c connection
	select {
	case c = <-connected:
	case <-ctx.Done():
		t.Fatal("connect did not return after the authorization")
	}
	if c.err != nil {
		t.Fatalf("connect with the metadata document client: %v", c.err)
	}
	t.Cleanup(func() { c.cs.Close() })
	projects := must(t, c.cs, "list_projects", nil)["projects"].([]any)
	if len(projects) != 1 || projects[0].(map[string]any)["name"] != "demo" {
		t.Fatalf("list_projects: %v", projects)
	}
	found := false
	for _, cl := range oauthClients(t, data) {
		if cl["client_id"] == docURL {
			found = cl["kind"] == "metadata" && cl["name"] == "Go SDK e2e"
		}
	}
	if !found {
		t.Fatalf("oauth clients does not list %s as a metadata client: %v", docURL, oauthClients(t, data))
	}

	// The refused documents. The page says why (reason: a few words of
	// it), so that each case is known to fail on its own rule.
	refused := func(t *testing.T, issuer, dataDir, clientID, reason string) {
		t.Helper()
		_, challenge := pkce()
		r := send(t, noRedirects, mustRequest(t, "GET", authorizeURL(issuer, clientID, cimdRedirect, challenge, "st", "")))
		if r.Status != http.StatusBadRequest || r.Header.Get("Location") != "" || !strings.Contains(r.Body, `id="error-message"`) ||
			!strings.Contains(r.Body, reason) {
			t.Errorf("authorize with %s: %d Location %q, want 400, no Location and an error page saying %q\n%s",
				clientID, r.Status, r.Header.Get("Location"), reason, r.Body)
		}
		for _, cl := range oauthClients(t, dataDir) {
			if cl["client_id"] == clientID {
				t.Errorf("the refused client %s is stored: %v", clientID, cl)
			}
		}
	}
	t.Run("client_id differs from its URL", func(t *testing.T) {
		refused(t, srv.Issuer, data, docs.URL+"/other.json", "does not equal the document URL")
	})
	t.Run("over 16 KiB", func(t *testing.T) {
		refused(t, srv.Issuer, data, docs.URL+"/big.json", "larger than")
	})
	t.Run("private address without the test setting", func(t *testing.T) {
		other, otherData := oauthServe(t, "sqlite")
		before := docs.conns.Load()
		refused(t, other.Issuer, otherData, docURL, "not public")
		if n := docs.conns.Load() - before; n != 0 {
			t.Errorf("the server connected %d time(s) to the document's private address", n)
		}
	})
}

func mustRequest(t *testing.T, method, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
