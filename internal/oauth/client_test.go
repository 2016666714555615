package oauth_test

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

// docServer serves one Client ID Metadata Document over TLS and counts
// the fetches.
type docServer struct {
	srv      *httptest.Server
	clientID string
	mu       sync.Mutex
	name     string
	status   int
	fetches  int
	// together, when set, holds every answer until that many fetches
	// arrived, so that concurrent first sights store at once.
	together int
	arrived  chan struct{}
}

func newDocServer(t *testing.T) (*docServer, oauth.FetcherOptions) {
	d := &docServer{name: "Doc App", status: http.StatusOK}
	d.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.fetches++
		if d.fetches == d.together {
			close(d.arrived)
		}
		wait := d.arrived
		d.mu.Unlock()
		if wait != nil {
			select {
			case <-wait:
			case <-time.After(5 * time.Second):
			}
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.status != http.StatusOK {
			w.WriteHeader(d.status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=600")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":%q,"redirect_uris":[%q],"token_endpoint_auth_method":"none"}`,
			d.clientID, d.name, cb)
	}))
	t.Cleanup(d.srv.Close)
	d.clientID = d.srv.URL + "/oauth/client.json"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return d, oauth.FetcherOptions{TestCAFile: ca}
}

func fetcher(t *testing.T, o oauth.FetcherOptions) *oauth.ClientDocFetcher {
	t.Helper()
	f, err := oauth.NewClientDocFetcher(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (d *docServer) set(name string, status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.name, d.status = name, status
}

func (d *docServer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches
}

// A metadata-document client is fetched on first sight, served from its
// row while the document's cache lifetime lasts, refetched after it, and
// refused when a refetch fails.
func TestMetadataClient(t *testing.T) { stores.Each(t, testMetadataClient) }

func testMetadataClient(t *testing.T) {
	d, fo := newDocServer(t)
	e := setupOAuth(t, oauth.Options{Fetcher: fetcher(t, fo)})
	verifier, challenge := pkce()
	az, err := e.s.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge))
	if err != nil {
		t.Fatalf("first authorization: %v", err)
	}
	c := az.Client
	if c.Kind != continuo.ClientMetadata || c.ClientID != d.clientID || c.Name != "Doc App" || c.AuthMethod != continuo.AuthMethodNone ||
		!continuo.ValidID(continuo.PrefixOAuthClient, c.ID) || d.count() != 1 {
		t.Fatalf("client %+v after %d fetches", c, d.count())
	}
	tr, err := e.exchange(oauth.ClientAuth{ID: d.clientID}, e.consent(az, az.Scopes), cb, verifier)
	if err != nil || !e.works(tr.AccessToken) {
		t.Fatalf("exchange: %v", err)
	}

	// Within the cache lifetime (at least 5 minutes whatever it says): no fetch.
	e.clk.T = e.clk.T.Add(time.Minute)
	if _, err := e.s.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge)); err != nil || d.count() != 1 {
		t.Fatalf("cached: %v after %d fetches", err, d.count())
	}

	// Past it (at most a day): fetched again, same row, the new name.
	d.set("Renamed", http.StatusOK)
	e.clk.T = e.clk.T.Add(25 * time.Hour)
	az, err = e.s.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge))
	if err != nil || d.count() != 2 || az.Client.ID != c.ID || az.Client.Name != "Renamed" {
		t.Fatalf("refreshed: %+v %v after %d fetches", az, err, d.count())
	}
	cs, err := e.a.OAuthClients(e.ctx)
	if err != nil || len(cs) != 1 || cs[0].Name != "Renamed" || cs[0].Kind != "metadata" || cs[0].ActiveGrants != 1 {
		t.Fatalf("clients %+v %v", cs, err)
	}

	// A failed refetch refuses the authorization, with an error page; the
	// tokens already issued are not touched by it.
	d.set("Renamed", http.StatusInternalServerError)
	e.clk.T = e.clk.T.Add(25 * time.Hour)
	if _, err := e.s.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge)); err == nil || redirects(err) {
		t.Fatalf("failed refetch: %v", err)
	}
	if d.count() != 3 {
		t.Fatalf("%d fetches", d.count())
	}

	// A revoked document client is refused without a fetch.
	d.set("Renamed", http.StatusOK)
	if _, _, err := e.a.RevokeOAuth(e.ctx, d.clientID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge)); oerr(err) != "invalid_client" || d.count() != 3 {
		t.Fatalf("revoked document client: %v after %d fetches", err, d.count())
	}
}

// A document that cannot be fetched the first time makes no client.
func TestMetadataClientUnreachable(t *testing.T) { stores.Each(t, testMetadataClientUnreachable) }

func testMetadataClientUnreachable(t *testing.T) {
	d, fo := newDocServer(t)
	d.set("", http.StatusNotFound)
	e := setupOAuth(t, oauth.Options{Fetcher: fetcher(t, fo)})
	_, challenge := pkce()
	if _, err := e.s.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge)); oerr(err) != "invalid_client" || redirects(err) {
		t.Fatalf("unreachable document: %v", err)
	}
	if cs, err := e.a.OAuthClients(e.ctx); err != nil || len(cs) != 0 {
		t.Fatalf("clients %+v %v", cs, err)
	}
	// Redirect URIs of a document client are its document's.
	d.set("Doc App", http.StatusOK)
	r := e.request(d.clientID, "https://evil.example/cb", challenge)
	if _, err := e.s.CheckAuthorize(e.ctx, r); err == nil || redirects(err) {
		t.Fatalf("redirect outside the document: %v", err)
	}
}

// Replicas meeting a new document at once share one client row.
func TestMetadataClientConcurrentFirstSight(t *testing.T) {
	stores.Each(t, testMetadataClientConcurrentFirstSight)
}

func testMetadataClientConcurrentFirstSight(t *testing.T) {
	d, fo := newDocServer(t)
	e := setupOAuth(t, oauth.Options{Fetcher: fetcher(t, fo)})
	_, challenge := pkce()
	const n = 4
	d.together, d.arrived = n, make(chan struct{})
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		_, replica := e.server(testIssuer, oauth.Options{Fetcher: fetcher(t, fo)})
		wg.Go(func() {
			az, err := replica.CheckAuthorize(e.ctx, e.request(d.clientID, cb, challenge))
			if errs[i] = err; err == nil {
				ids[i] = az.Client.ID
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("replica %d: %s %v (first: %s)", i, ids[i], errs[i], ids[0])
		}
	}
	if cs, err := e.a.OAuthClients(e.ctx); err != nil || len(cs) != 1 {
		t.Fatalf("clients %+v %v", cs, err)
	}
}
