package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/continuo-dev/continuo/internal/redact"
)

// Cross-site request forgery: every form of ours carries a hidden field
// csrf = base64url(HMAC(csrfKey, cookie || 0 || form name)), where cookie
// is a random secret in the browser's continuo_csrf cookie. A page of
// another site can make the browser post, but it can read neither the
// cookie nor our pages, so it cannot compute the field; and the cookie is
// SameSite=Strict, so a cross-site post does not even carry it. The form
// name binds a field to its form: the sign-in form's field does not
// approve a consent. Keyed by the server secret, a field made by one
// replica is good on every other.

// The form names.
const (
	formSignIn  = "signin"
	formConsent = "consent"
	formLogout  = "logout"
)

// csrfSecret returns the browser's CSRF secret, giving it one when it has
// none yet (or a malformed one). A page computes each form's field from it
// with csrfMAC.
func (e *oauthEdge) csrfSecret(w http.ResponseWriter, r *http.Request) string {
	v := e.cookie(r, csrfCookie)
	if !validCSRFSecret(v) {
		var b [32]byte
		_, _ = rand.Read(b[:])
		v = base64.RawURLEncoding.EncodeToString(b[:])
		redact.RegisterMinted(v)
		e.setCookie(w, csrfCookie, v, http.SameSiteStrictMode, cookieAge)
	}
	return v
}

func (e *oauthEdge) csrfMAC(secret, form string) string {
	m := hmac.New(sha256.New, e.csrfKey)
	m.Write([]byte(secret))
	m.Write([]byte{0})
	m.Write([]byte(form))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func validCSRFSecret(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

// postAllowed reports whether a parsed form post of form may be acted on:
// an Origin header, when the browser sent one, names the issuer, and the
// csrf field matches the browser's cookie.
func (e *oauthEdge) postAllowed(r *http.Request, form string) bool {
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, e.origin) {
		return false
	}
	secret := e.cookie(r, csrfCookie)
	if !validCSRFSecret(secret) {
		return false
	}
	return hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(e.csrfMAC(secret, form)))
}
