package oauth

import "net/http"

// OAuthError is an OAuth protocol error (RFC 6749 §4.1.2.1 and §5.2,
// RFC 7591 §3.2.2, RFC 8707 §2): the code a client acts on, a short
// description for a person, and the HTTP status of the response.
type OAuthError struct {
	Status      int
	Code        string
	Description string
	// Redirect is set by the authorization endpoint once the redirect URI
	// is known to be the client's: the error goes back to the client.
	// Before that it is shown to the user, never sent anywhere.
	Redirect bool
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

// oauthErr returns a 400 OAuth error with code and description.
func oauthErr(code, description string) *OAuthError {
	return &OAuthError{Status: http.StatusBadRequest, Code: code, Description: description}
}
