package oauth

import "github.com/continuo-dev/continuo"

// ValidRedirectURI and ParseClientScope expose the client metadata checks
// to the external tests as plain errors.
func ValidRedirectURI(u string) error {
	if e := checkRedirectURI(u); e != nil {
		return e
	}
	return nil
}

func ParseClientScope(scope string) ([]continuo.Scope, error) {
	s, e := parseClientScope(scope)
	if e != nil {
		return nil, e
	}
	return s, nil
}
