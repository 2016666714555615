package e2e

import (
	"image"
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
	colours, sum, sumSq := pixelStats(img)
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

// pixelStats returns how many pixels img has of each colour (0xRRGGBB,
// 8 bits each, as img.At(x, y).RGBA() gives them: alpha premultiplied),
// and the sum and the sum of squares of their luminance. It reads the
// pixels of the formats PNG decodes a screenshot into straight from
// memory, and counts a run of one colour at once: img.At allocates a
// colour per pixel and a map update per pixel adds up, seconds per
// screenshot under -race.
func pixelStats(img image.Image) (colours map[uint32]int, sum, sumSq float64) {
	colours = map[uint32]int{}
	var run int     // pixels of colour c not counted yet
	var c uint32    // the colour of the run
	add := func() { // count the run
		if run == 0 {
			return
		}
		colours[c] += run
		r, g, b := float64(c>>16), float64(c>>8&0xff), float64(c&0xff)
		l := 0.299*r + 0.587*g + 0.114*b
		sum += l * float64(run)
		sumSq += l * l * float64(run)
		run = 0
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		var row []uint8 // RGBA bytes of opaque pixels, or nil to use At
		switch m := img.(type) {
		case *image.RGBA:
			row = m.Pix[m.PixOffset(b.Min.X, y):m.PixOffset(b.Max.X, y)]
		case *image.NRGBA:
			row = m.Pix[m.PixOffset(b.Min.X, y):m.PixOffset(b.Max.X, y)]
			for i := 3; i < len(row); i += 4 {
				if row[i] != 0xff { // not opaque: At premultiplies
					row = nil
					break
				}
			}
		}
		for x := b.Min.X; x < b.Max.X; x++ {
			var p uint32
			if row != nil {
				i := 4 * (x - b.Min.X)
				p = uint32(row[i])<<16 | uint32(row[i+1])<<8 | uint32(row[i+2])
			} else {
				r, g, bl, _ := img.At(x, y).RGBA()
				p = r>>8<<16 | g>>8<<8 | bl>>8
			}
			if p != c {
				add()
				c = p
			}
			run++
		}
	}
	add()
	return colours, sum, sumSq
}
