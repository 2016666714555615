package web

import (
	"net/http"
	"time"
)

// The browser's cookies: its signed-in session and its CSRF secret. On an
// https issuer both carry the __Host- prefix, which the browser honours
// only for a Secure cookie of Path=/ without Domain, so that no sibling
// host can plant or overwrite one; a loopback http issuer cannot have
// Secure cookies and uses the plain names.
const (
	sessionCookie = "continuo_session"
	csrfCookie    = "continuo_csrf"
	hostPrefix    = "__Host-"
	// cookieAge is the browser session's lifetime (the auth service's
	// default); the CSRF secret lives as long.
	cookieAge = 12 * time.Hour
)

func (e *oauthEdge) cookieName(base string) string {
	if e.secure {
		return hostPrefix + base
	}
	return base
}

func (e *oauthEdge) setCookie(w http.ResponseWriter, base, value string, sameSite http.SameSite, age time.Duration) {
	c := &http.Cookie{Name: e.cookieName(base), Value: value, Path: "/", HttpOnly: true, Secure: e.secure,
		SameSite: sameSite, MaxAge: int(age / time.Second)}
	if age < 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func (e *oauthEdge) cookie(r *http.Request, base string) string {
	c, err := r.Cookie(e.cookieName(base))
	if err != nil {
		return ""
	}
	return c.Value
}

// The session cookie is Lax: the browser must send it on the top-level
// navigation from the client's site to the authorize page.
func (e *oauthEdge) setSession(w http.ResponseWriter, secret string) {
	e.setCookie(w, sessionCookie, secret, http.SameSiteLaxMode, cookieAge)
}

func (e *oauthEdge) clearSession(w http.ResponseWriter) {
	e.setCookie(w, sessionCookie, "", http.SameSiteLaxMode, -1)
}
