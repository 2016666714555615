package web

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/continuo-dev/continuo"
)

// Browser sign-in: with a single-use login link the operator made
// (GET /login?code=… only shows whose it is, so that a link previewer
// cannot spend it; the button posts), or on the authorize page's form with
// a login code or a personal access token. Either way the browser gets a
// session cookie.

// signedIn returns the browser's signed-in caller, or nil; an error only
// when the session could not be looked up.
func (e *oauthEdge) signedIn(w http.ResponseWriter, r *http.Request) (*continuo.Caller, error) {
	secret := e.cookie(r, sessionCookie)
	if secret == "" {
		return nil, nil
	}
	c, err := e.svc.WebSession(r.Context(), secret)
	if continuo.ErrorCode(err) == continuo.CodeUnauthorized {
		e.clearSession(w) // expired or revoked: forget it
		return nil, nil
	}
	return c, err
}

func (e *oauthEdge) renderSignIn(w http.ResponseWriter, r *http.Request, status int, action, next, client, msg string) {
	render(w, status, "signin", signInView{Title: "Sign in", Action: action, ForClient: client, Error: msg, Next: next,
		CSRF: e.csrfMAC(e.csrfSecret(w, r), formSignIn)})
}

// loginPage is GET /login: the confirm page of a login link, or without a
// code the sign-in form. It never spends the link.
func (e *oauthEdge) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	next := safeNext(q.Get("next"))
	code := q.Get("code")
	if code == "" {
		e.renderSignIn(w, r, http.StatusOK, "/login", next, "", "")
		return
	}
	p, err := e.svc.LoginLinkPrincipal(r.Context(), code)
	if err != nil {
		if continuo.ErrorCode(err) == continuo.CodeInternal {
			e.unavailable(w, r, err)
			return
		}
		renderError(w, http.StatusBadRequest, "This sign-in link cannot be used",
			"It was used already, it has expired, or it was copied incompletely.",
			"Ask the operator for a new one (continuo login-link --principal NAME).")
		return
	}
	render(w, http.StatusOK, "login", loginView{Title: "Sign in", Principal: p.Name, Code: code, Next: next,
		CSRF: e.csrfMAC(e.csrfSecret(w, r), formSignIn)})
}

// signIn is POST /login and POST /oauth/login: the field secret holds a
// login code or a personal access token.
func (e *oauthEdge) signIn(w http.ResponseWriter, r *http.Request) {
	if !e.readForm(w, r) {
		return
	}
	if !e.postAllowed(r, formSignIn) {
		renderForbidden(w)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	secret := strings.TrimSpace(r.PostForm.Get("secret"))
	if secret == "" {
		e.renderSignIn(w, r, http.StatusBadRequest, r.URL.Path, next, "", "Paste a sign-in code or a token.")
		return
	}
	session, _, err := e.svc.SignIn(r.Context(), secret)
	if err != nil {
		switch ce := continuo.AsError(err); ce.Code {
		case continuo.CodeInternal:
			e.unavailable(w, r, err)
		case continuo.CodeForbidden:
			e.renderSignIn(w, r, http.StatusForbidden, r.URL.Path, next, "", ce.Message)
		default:
			e.renderSignIn(w, r, http.StatusUnauthorized, r.URL.Path, next, "",
				"That code or token was not accepted: it may have been used already, have expired, or been revoked.")
		}
		return
	}
	if old := e.cookie(r, sessionCookie); old != "" {
		_ = e.svc.SignOut(r.Context(), old) // a browser holds one session: the one it replaces ends
	}
	e.setSession(w, session)
	seeOther(w, next)
}

// signOut is POST /logout.
func (e *oauthEdge) signOut(w http.ResponseWriter, r *http.Request) {
	if !e.readForm(w, r) {
		return
	}
	if !e.postAllowed(r, formLogout) {
		renderForbidden(w)
		return
	}
	if secret := e.cookie(r, sessionCookie); secret != "" {
		if err := e.svc.SignOut(r.Context(), secret); err != nil && continuo.ErrorCode(err) == continuo.CodeInternal {
			e.unavailable(w, r, err)
			return
		}
	}
	e.clearSession(w)
	seeOther(w, safeNext(r.PostForm.Get("next")))
}

// readForm parses a page's form post into r.PostForm (its body was read,
// bounded in size and time, by bounded), or answers the request and
// returns false.
func (e *oauthEdge) readForm(w http.ResponseWriter, r *http.Request) bool {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		renderError(w, http.StatusUnsupportedMediaType, "This form cannot be used", "It was not sent as a form.", "")
		return false
	}
	if err := r.ParseForm(); err != nil {
		renderError(w, http.StatusBadRequest, "This form cannot be used", "It could not be read.", "")
		return false
	}
	return true
}

// safeNext is where to send the browser after a form: a path of this site
// only, so that no link of ours forwards anyone elsewhere ("/" otherwise).
func safeNext(next string) string {
	if next == "" || len(next) > 8192 || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\") {
		return "/"
	}
	for _, c := range next {
		if c < 0x20 || c == 0x7f {
			return "/"
		}
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}
