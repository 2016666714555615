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

var actionRE = regexp.MustCompile(`(?s)<form [^>]*id="([^"]+)"[^>]*>`)
var actionAttrRE = regexp.MustCompile(`action="([^"]*)"`)

// FormAction returns the action of the page's form with the given id
// (unescaped), and false when the page has no such form.
func FormAction(page, id string) (string, bool) {
	for _, m := range actionRE.FindAllStringSubmatch(page, -1) {
		if m[1] != id {
			continue
		}
		a := actionAttrRE.FindStringSubmatch(m[0])
		if a == nil {
			return "", true
		}
		return html.UnescapeString(a[1]), true
	}
	return "", false
}
