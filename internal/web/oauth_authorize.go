package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
)

// The authorization endpoint (RFC 6749 §4.1.1): GET checks the request and
// shows the sign-in form or the consent page; the consent page posts back
// here with the request in hidden fields, which is checked again — a
// hidden field is the browser's to change.

// authorizeParams are the request's parameters, as the consent form
// carries them too.
var authorizeParams = []string{"client_id", "redirect_uri", "response_type", "scope", "state",
	"code_challenge", "code_challenge_method", "resource"}

func authorizeRequest(v url.Values) oauth.AuthorizeRequest {
	return oauth.AuthorizeRequest{ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"),
		ResponseType: v.Get("response_type"), Scope: v.Get("scope"), State: v.Get("state"),
		CodeChallenge: v.Get("code_challenge"), CodeChallengeMethod: v.Get("code_challenge_method"),
		Resource: v.Get("resource")}
}

// authorizeQuery is the authorize URL (a same-origin path) of a request.
func authorizeQuery(v url.Values) string {
	q := url.Values{}
	for _, k := range authorizeParams {
		if x := v.Get(k); x != "" {
			q.Set(k, x)
		}
	}
	return "/oauth/authorize?" + q.Encode()
}

func (e *oauthEdge) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, k := range authorizeParams {
		// RFC 6749 §3.1: a parameter must not be sent twice; which one
		// was meant is anyone's guess, so nothing is sent back.
		if len(q[k]) > 1 {
			renderError(w, http.StatusBadRequest, "This sign-in request is not valid",
				"The parameter "+k+" was given more than once.", "Go back to the application and try again.")
			return
		}
	}
	a, err := e.srv.CheckAuthorize(r.Context(), authorizeRequest(q))
	if err != nil {
		e.authorizeFailed(w, r, q, err)
		return
	}
	c, err := e.signedIn(w, r)
	if err != nil {
		e.unavailable(w, r, err)
		return
	}
	if c == nil {
		e.renderSignIn(w, r, http.StatusOK, "/oauth/login", authorizeQuery(q), clientName(a.Client), "")
		return
	}
	e.renderConsent(w, r, http.StatusOK, q, a, c, a.Scopes, "")
}

// consent acts on the consent page's decision.
func (e *oauthEdge) consent(w http.ResponseWriter, r *http.Request) {
	if !e.readForm(w, r) {
		return
	}
	if !e.postAllowed(r, formConsent) {
		renderForbidden(w)
		return
	}
	f := r.PostForm
	a, err := e.srv.CheckAuthorize(r.Context(), authorizeRequest(f))
	if err != nil {
		e.authorizeFailed(w, r, f, err)
		return
	}
	c, err := e.signedIn(w, r)
	if err != nil {
		e.unavailable(w, r, err)
		return
	}
	if c == nil { // signed out meanwhile: sign in again, then consent again
		seeOther(w, authorizeQuery(f))
		return
	}
	switch f.Get("decision") {
	case "deny":
		seeOther(w, e.srv.AuthorizeErrorURL(a.RedirectURI, a.State, &oauth.OAuthError{Status: http.StatusBadRequest,
			Code: "access_denied", Description: "the user denied the request", Redirect: true}))
	case "approve":
		var chosen []continuo.Scope
		for _, s := range f["grant_scope"] {
			if !slices.Contains(a.Scopes, continuo.Scope(s)) {
				renderError(w, http.StatusBadRequest, "This form cannot be used",
					"It asked for a permission the application did not request.", "Go back to the application and try again.")
				return
			}
			if !slices.Contains(chosen, continuo.Scope(s)) {
				chosen = append(chosen, continuo.Scope(s))
			}
		}
		if len(chosen) == 0 {
			e.renderConsent(w, r, http.StatusBadRequest, f, a, c, nil, "Choose at least one permission, or deny.")
			return
		}
		to, err := e.srv.IssueCode(r.Context(), a, c.PrincipalID, chosen)
		if err != nil {
			e.authorizeFailed(w, r, f, err)
			return
		}
		seeOther(w, to)
	default:
		renderError(w, http.StatusBadRequest, "This form cannot be used", "It carried no decision.", "Go back and choose Approve or Deny.")
	}
}

// authorizeFailed answers a refused authorization request: back to the
// client when its redirect URI is known good, else on a page of ours
// (never a redirect to a URI the client may not own).
func (e *oauthEdge) authorizeFailed(w http.ResponseWriter, r *http.Request, v url.Values, err error) {
	var oe *oauth.OAuthError
	if !errors.As(err, &oe) {
		e.unavailable(w, r, err)
		return
	}
	if oe.Redirect {
		seeOther(w, e.srv.AuthorizeErrorURL(v.Get("redirect_uri"), v.Get("state"), oe))
		return
	}
	status := oe.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	renderError(w, status, "This sign-in request is not valid", oe.Description,
		"The application that sent you here is misconfigured or unknown to this server. Nothing was shared with it.")
}

func (e *oauthEdge) renderConsent(w http.ResponseWriter, r *http.Request, status int, v url.Values, a *oauth.Authorization,
	c *continuo.Caller, checked []continuo.Scope, msg string) {
	visible, err := e.svc.ProjectsOf(r.Context(), c)
	if err != nil {
		e.unavailable(w, r, err)
		return
	}
	p := consentView{Title: "Allow access", ClientName: clientName(a.Client), ClientKind: clientKind(a.Client),
		RedirectsTo: redirectsTo(a.RedirectURI), Error: msg, Principal: c.Principal, Next: authorizeQuery(v)}
	for _, k := range authorizeParams {
		if x := v.Get(k); x != "" {
			p.Hidden = append(p.Hidden, field{k, x})
		}
	}
	for _, s := range a.Scopes {
		p.Scopes = append(p.Scopes, scopeChoice{ID: "scope-" + strings.NewReplacer(":", "-", "_", "-").Replace(string(s)),
			Name: string(s), Meaning: scopeMeaning(s), Checked: slices.Contains(checked, s)})
	}
	for _, x := range visible {
		access := "read"
		if x.Access == continuo.AccessWrite {
			access = "read & write"
		}
		p.Projects = append(p.Projects, projectLine{Name: x.Project.Name, Access: access})
	}
	secret := e.csrfSecret(w, r)
	p.CSRF, p.LogoutCSRF = e.csrfMAC(secret, formConsent), e.csrfMAC(secret, formLogout)
	var action []string
	if src := formActionSource(a.RedirectURI); src != "" {
		action = append(action, src)
	}
	render(w, status, "consent", p, action...)
}

func scopeMeaning(s continuo.Scope) string {
	if m, ok := scopeMeanings[s]; ok {
		return m
	}
	return string(s)
}

func clientName(c *continuo.OAuthClient) string {
	if c == nil {
		return "An application"
	}
	if c.Name != "" {
		return c.Name
	}
	if u, err := url.Parse(c.ClientID); err == nil && u.Host != "" {
		return u.Host
	}
	return "An unnamed application"
}

func clientKind(c *continuo.OAuthClient) string {
	if c != nil && c.Kind == continuo.ClientMetadata {
		if u, err := url.Parse(c.ClientID); err == nil && u.Host != "" {
			return "Published by " + u.Host
		}
	}
	return "Registered with this server"
}

// seeOther redirects a browser after a request, with a GET (303).
func seeOther(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

func (e *oauthEdge) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	e.log.ErrorContext(r.Context(), "oauth page", "path", r.URL.Path, "err", err)
	renderUnavailable(w)
}
