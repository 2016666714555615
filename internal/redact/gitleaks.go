package redact

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp/syntax"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// gitleaks' default rule set, as data: config/gitleaks.toml of
// github.com/zricethezav/gitleaks/v8 (MIT, gitleaks/LICENSE), at the version
// gitleaksVersion names. gitleaks/README.md says how to update it.
//
//go:embed gitleaks/gitleaks.toml
var gitleaksTOML []byte

// gitleaksEnd is how gitleaks' generated rules end a secret, and proseEnd
// how we read it (see gitleaksRules).
const (
	gitleaksEnd = `(?:[\x60'"\s;]|\\[nr]|$)`
	proseEnd    = `(?:[\x60'"\s;.,:!?)\]}>]|\\[nr]|$)`
)

const (
	gitleaksVersion = "v8.30.1"
	sourceGitleaks  = "gitleaks"
	sourceContinuo  = "continuo"
)

// glConfig is the part of gitleaks' configuration format that the default
// file uses. Unknown keys are an error, so that a new version of the file
// whose rules say something this reader does not know fails the tests
// instead of being read wrong.
type glConfig struct {
	Title      string        `toml:"title"`
	MinVersion string        `toml:"minVersion"`
	Allowlist  glAllowlist   `toml:"allowlist"`
	Allowlists []glAllowlist `toml:"allowlists"`
	Rules      []glRule      `toml:"rules"`
}

type glRule struct {
	ID          string        `toml:"id"`
	Description string        `toml:"description"`
	Regex       string        `toml:"regex"`
	SecretGroup int           `toml:"secretGroup"`
	Entropy     float64       `toml:"entropy"`
	Keywords    []string      `toml:"keywords"`
	Path        string        `toml:"path"`
	Tags        []string      `toml:"tags"`
	Allowlists  []glAllowlist `toml:"allowlists"`
}

type glAllowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
	Commits     []string `toml:"commits"`
	TargetRules []string `toml:"targetRules"`
}

// gitleaksRules reads the embedded rule file: its rules that look at
// content (a rule of a file path alone, such as pkcs12-file, has nothing to
// look at in a note), and the global allowlist.
//
// Rules that gitleaks applies to files of one kind only (a path with a
// regex: kubernetes-secret-yaml, hashicorp-tf-password, …) apply to every
// text here: a note has no path, and a Kubernetes secret pasted into one is
// still a secret.
func gitleaksRules(data []byte) ([]secretRule, *allowlist, error) {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg glConfig
	if err := dec.Decode(&cfg); err != nil {
		return nil, nil, fmt.Errorf("gitleaks rules: %w", err)
	}
	if len(cfg.Allowlists) > 0 {
		return nil, nil, fmt.Errorf("gitleaks rules: [[allowlists]] is not read (only the one global [allowlist])")
	}
	global, err := compileAllowlist(cfg.Allowlist)
	if err != nil {
		return nil, nil, fmt.Errorf("gitleaks rules: global allowlist: %w", err)
	}
	var rules []secretRule
	seen := map[string]bool{}
	for _, gr := range cfg.Rules {
		if seen[gr.ID] {
			return nil, nil, fmt.Errorf("gitleaks rules: rule %q twice", gr.ID)
		}
		seen[gr.ID] = true
		if gr.Regex == "" {
			continue // a rule of paths alone
		}
		parsed, err := syntax.Parse(gr.Regex, syntax.Perl)
		if err != nil {
			return nil, nil, fmt.Errorf("gitleaks rule %s: %w", gr.ID, err)
		}
		if gr.SecretGroup < 0 || gr.SecretGroup > parsed.MaxCap() {
			return nil, nil, fmt.Errorf("gitleaks rule %s: secretGroup %d of %d groups", gr.ID, gr.SecretGroup, parsed.MaxCap())
		}
		r := secretRule{id: gr.ID, source: sourceGitleaks, expr: gr.Regex, group: gr.SecretGroup, entropy: gr.Entropy}
		for _, k := range gr.Keywords {
			r.keywords = append(r.keywords, strings.ToLower(k))
		}
		for _, ga := range gr.Allowlists {
			a, err := compileAllowlist(ga)
			if err != nil {
				return nil, nil, fmt.Errorf("gitleaks rule %s: allowlist: %w", gr.ID, err)
			}
			r.allow = append(r.allow, *a)
		}
		// The end of a secret may be sentence punctuation: notes are prose
		// ("published npm_…, revoke it", "(hf_…)"). gitleaks' rules end
		// theirs at a quote, a blank or ";" (GenerateUniqueTokenRegex,
		// GenerateSemiGenericRegex); ours also at . , : ! ? ) ] } >.
		// (positive.txt: npm (in prose); redact_test.go: "hugging face".)
		expr := strings.ReplaceAll(gr.Regex, gitleaksEnd, proseEnd)
		r.expr = expr
		if o, ok := gitleaksOverrides[gr.ID]; ok {
			r.accept, r.narrow = o.accept, o.narrow
		}
		if r.plans, err = newPlans(expr, gr.SecretGroup); err != nil {
			return nil, nil, fmt.Errorf("gitleaks rule %s: %w", gr.ID, err)
		}
		rules = append(rules, r)
	}
	return rules, global, nil
}

func compileAllowlist(ga glAllowlist) (*allowlist, error) {
	a := &allowlist{}
	switch strings.ToUpper(ga.Condition) {
	case "", "OR", "||":
	case "AND", "&&":
		a.and = true
	default:
		return nil, fmt.Errorf("condition %q", ga.Condition)
	}
	switch ga.RegexTarget {
	case "", "secret":
	case "match", "line":
		a.target = ga.RegexTarget
	default:
		return nil, fmt.Errorf("regexTarget %q", ga.RegexTarget)
	}
	if len(ga.TargetRules) > 0 {
		return nil, fmt.Errorf("targetRules are not read")
	}
	for _, expr := range ga.Regexes {
		x, err := newSearch(expr)
		if err != nil {
			return nil, err
		}
		a.regexes = append(a.regexes, x)
	}
	for _, w := range ga.StopWords {
		a.stopwords = append(a.stopwords, strings.ToLower(w))
	}
	a.indexStopwords()
	// Paths and commits name files and commits a note does not have: with
	// OR they never allow anything here, with AND they make the list never
	// hold.
	if a.and && (len(ga.Paths) > 0 || len(ga.Commits) > 0) {
		a.never = true
	}
	if len(a.regexes) == 0 && len(a.stopwords) == 0 && !a.and {
		a.never = true // paths or commits alone
	}
	return a, nil
}
