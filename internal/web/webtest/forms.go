// Package webtest reads Continuo's own sign-in and consent pages the way a
// browser would submit them, for tests that play the user over HTTP.
package webtest

import (
	"html"
	"net/url"
	"regexp"
)

var (
	formRE     = regexp.MustCompile(`(?s)<form [^>]*id="([^"]+)"[^>]*>(.*?)</form>`)
	hiddenRE   = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	checkboxRE = regexp.MustCompile(`<input type="checkbox" name="grant_scope" value="([^"]+)" id="[^"]+"( checked)?>`)
)

// FormFields returns the hidden fields of the page's form with the given
// id, and in the consent form each checked scope as grant_scope; false
// when the page has no such form.
func FormFields(page, id string) (url.Values, bool) {
	for _, m := range formRE.FindAllStringSubmatch(page, -1) {
		if m[1] != id {
			continue
		}
		v := url.Values{}
		for _, h := range hiddenRE.FindAllStringSubmatch(m[2], -1) {
			v.Add(html.UnescapeString(h[1]), html.UnescapeString(h[2]))
		}
		for _, c := range checkboxRE.FindAllStringSubmatch(m[2], -1) {
			if c[2] != "" {
				v.Add("grant_scope", html.UnescapeString(c[1]))
			}
		}
		return v, true
	}
	return nil, false
}
