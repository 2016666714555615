package e2e

import (
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOAuthConsentInBrowser drives the sign-in and consent pages in
// headless Chromium (interop/consent.mjs, playwright-core) against a real
// serve process: a client registered by POST /oauth/register with its
// redirect URI on a Go receiver, the person signs in with a login code,
// sees the client's name and each requested scope with its meaning, and
// approves; Chromium follows the redirect (which the page's
// Content-Security-Policy form-action must allow) to the receiver, which
// gets the code and state, and the code redeems for a working token. The
// screenshot of the consent page is a real rendering: a PNG of a page
// size, not blank.
func TestOAuthConsentInBrowser(t *testing.T) {
	node, chromium := browserScripts(t)
	srv, data := oauthServe(t, "sqlite")

	got := make(chan url.Values, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			select {
			case got <- r.URL.Query():
			default:
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>client</title><p>received</p>"))
	}))
	t.Cleanup(recv.Close)
	redirect := recv.URL + "/callback"
	clientID := register(t, srv.Issuer, "Consent e2e", redirect)
	verifier, challenge := pkce()
	const scopes = "sessions:read sessions:write"
	shot := filepath.Join(t.TempDir(), "consent.png")
	node.run(t, "consent.mjs", 9, "--url", authorizeURL(srv.Issuer, clientID, redirect, challenge, "st-browser", scopes),
		"--secret", loginCode(t, data, "alice"), "--client-name", "Consent e2e", "--scopes", scopes,
		"--redirect", redirect, "--screenshot", shot, "--chromium", chromium)

	var q url.Values
	select {
	case q = <-got:
	default:
		t.Fatal("the client's redirect URI was never reached")
	}
	if q.Get("state") != "st-browser" || q.Get("iss") != srv.Issuer || q.Get("code") == "" {
		t.Fatalf("the client received %v", q)
	}
	tk := exchange(t, srv.Issuer, clientID, redirect, q.Get("code"), verifier)
	if tk.Scope != scopes {
		t.Errorf("granted scope %q, want %q", tk.Scope, scopes)
	}
	must(t, connect(t, srv.URL, tk.Access), "list_projects", nil)

	checkScreenshot(t, shot)
}

// chromiumPath finds the headless browser the browser tests drive: the
// one CONTINUO_CHROMIUM names (.ci/run exports the one it found or
// installed), else chromium on PATH, else /usr/bin/chromium.
func chromiumPath() (string, error) {
	if p := os.Getenv("CONTINUO_CHROMIUM"); p != "" {
		return exec.LookPath(p) // named: no other one instead
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		p, err = exec.LookPath("/usr/bin/chromium")
	}
	return p, err
}

// browserScripts is nodeScripts for the scripts that drive Chromium
// (playwright-core), and the Chromium they drive; it skips — or fails
// under CI=true — without them.
func browserScripts(t *testing.T) (node nodeRunner, chromium string) {
	t.Helper()
	chromium, err := chromiumPath()
	if err != nil {
		skipOrFail(t, "no Chromium (set CONTINUO_CHROMIUM, or apt-get install chromium): %v", err)
	}
	node = nodeScripts(t)
	if _, err := os.Stat(filepath.Join(node.dir, "node_modules", "playwright-core")); err != nil {
		skipOrFail(t, "%s/node_modules/playwright-core is missing: run `npm ci` in interop", node.dir)
	}
	return node, chromium
}

// checkScreenshot asserts a PNG is a rendered page: at least 300×300, many
// colours (anti-aliased text), and a spread of brightness that text on a
// background has and a blank or one-colour image has not.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 300 || b.Dy() < 300 {
		t.Fatalf("screenshot is %d×%d", b.Dx(), b.Dy())
	}
	colours := map[[3]uint32]int{}
	var sum, sumSq float64
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
			l := 0.299*float64(r>>8) + 0.587*float64(g>>8) + 0.114*float64(bl>>8)
			sum += l
			sumSq += l * l
		}
	}
	n := float64(b.Dx() * b.Dy())
	mean := sum / n
	stddev := math.Sqrt(sumSq/n - mean*mean)
	background := 0
	for _, c := range colours {
		background = max(background, c)
	}
	ink := 1 - float64(background)/n
	t.Logf("screenshot %d×%d: %d colours, brightness %.0f±%.1f, %.1f%% not background", b.Dx(), b.Dy(), len(colours), mean, stddev, 100*ink)
	if len(colours) < 32 || stddev < 8 || ink < 0.01 {
		t.Errorf("the screenshot looks blank: %d colours, brightness deviation %.1f, %.2f%% not background", len(colours), stddev, 100*ink)
	}
}
