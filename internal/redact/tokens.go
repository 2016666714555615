package redact

import (
	"regexp"
	"slices"
	"strings"
)

// tokenRule is a credential recognisable by its own shape: a provider's
// literal prefix and a body of known characters and length.
//
// The shapes follow the gitleaks default configuration (config/gitleaks.toml,
// rule ids given below as "gitleaks <id>") and Yelp's detect-secrets plugins
// ("detect-secrets <plugin>"); the code is ours. Where we differ from them we
// say so. In general we drop their right-hand boundaries (a token glued to a
// following word is still removed, as far as its body reaches) and accept
// somewhat longer bodies, because a missed key costs more than a hole in a
// brief.
type tokenRule struct {
	id       string   // the rule's name in the corpus test (testdata/corpus)
	prefixes []string // literals, one of which every match contains
	// bounded rules need a start of token: the start of the text, or a byte
	// that is not a letter, digit or '_' before it. Only prefixes that occur
	// inside ordinary identifiers need it (see below). Their bodies have a
	// bounded length, or a class without their prefix, so that trying them
	// at every prefix costs linear time; they are matched at the prefix.
	bounded bool
	// re finds the rule's matches (anywhere, or at the start for bounded
	// rules). With a capture group, only the group is replaced: the rest of
	// the match (a webhook's host) says nothing secret.
	re     *regexp.Regexp
	expr   string
	maxLen int // bounded rules: the longest match
}

func rule(id string, prefixes []string, expr string) tokenRule {
	return tokenRule{id: id, prefixes: prefixes, expr: expr, re: regexp.MustCompile(expr)}
}

// withBound makes r bounded; maxLen bounds its matches' length (and so the
// input its regexp is given at each prefix: a regexp's set-up costs in
// proportion to its input).
func (r tokenRule) withBound(maxLen int) tokenRule {
	r.bounded, r.maxLen = true, maxLen
	r.re = regexp.MustCompile(`^(?:` + r.expr + `)`)
	return r
}

// awsID is the id of the AWS access key rule: its matches also anchor the
// search for the unlabelled secret access key next to them (awsSecrets).
const awsID = "aws-access-key-id"

// tokenRules have, unless bounded, no left boundary on purpose: a key glued
// to a preceding word ("mykeysk-...") is still a key, and the prefixes are
// rare enough in prose that this costs no false positives. No character
// class below contains '[' or ']', so a match can never include an earlier
// "[redacted]" and a rule cannot match differently on a second pass.
var tokenRules = []tokenRule{
	// OpenAI (gitleaks openai-api-key, detect-secrets openai) and Anthropic
	// (gitleaks anthropic-api-key, anthropic-admin-api-key). Theirs require
	// the "T3BlbkFJ" marker or exact lengths; ours takes any "sk-" with a
	// run of 16 letters/digits, so that project keys of any length and
	// keys without the marker go too, while slugs such as
	// "task-management-overview" (words ending in "sk") are not keys.
	rule("openai-anthropic", []string{"sk-"},
		`sk-(?:ant-[A-Za-z0-9_-]{16,}|proj-[A-Za-z0-9_-]{16,}|[A-Za-z0-9_-]*?[A-Za-z0-9]{16}[A-Za-z0-9_-]*)`),
	// GitHub (gitleaks github-pat, github-oauth, github-app-token,
	// github-refresh-token, github-fine-grained-pat; detect-secrets
	// github_token). Theirs want exactly 36 (82) characters; ours 20 or more.
	rule("github", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		`g(?:h[pousr]_[A-Za-z0-9]{20,}|ithub_pat_[A-Za-z0-9_]{20,})`),
	// GitLab (gitleaks gitlab-pat, gitlab-pat-routable, gitlab-deploy-token,
	// gitlab-runner-authentication-token(-routable), gitlab-feed-token,
	// gitlab-scim-token, gitlab-cicd-job-token, gitlab-ptt,
	// gitlab-kubernetes-agent-token, gitlab-oauth-app-secret,
	// gitlab-incoming-mail-token, gitlab-feature-flag-client-token,
	// gitlab-rrt; detect-secrets gitlab_token). Routable tokens end in
	// ".<2 base36><7 base36>".
	rule("gitlab", []string{"glpat-", "gldt-", "glrt-", "glft-", "glsoat-", "glcbt-", "glptt-", "glagent-", "gloas-", "glimt-", "glffct-", "GR1348941"},
		`gl(?:pat|dt|rt|ft|soat|cbt|ptt|agent|oas|imt|ffct)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{9})?|GR1348941[A-Za-z0-9_-]{20,}`),
	// Slack tokens (gitleaks slack-bot-token, slack-user-token,
	// slack-app-token, slack-legacy-*, slack-config-*; detect-secrets
	// slack): xoxa/xoxb/xoxe/xoxo/xoxp/xoxr/xoxs, xoxe.xoxb/xoxp, xapp.
	// xoxa/b/p/r/s take any body, as before; the newer xoxe and xoxo need a
	// digit first, as gitleaks has them ("xoxo-" is also a sign-off).
	rule("slack-token", []string{"xox", "xapp-"},
		`xox[abprs]-[A-Za-z0-9-]{10,}|xox[eo]-[0-9][A-Za-z0-9-]{9,}|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}`),
	// Slack webhooks (gitleaks slack-webhook-url, detect-secrets slack): the
	// path is the secret; the host stays, so a reader knows what it was.
	rule("slack-webhook", []string{"hooks.slack.com/"},
		`hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})`),
	// Stripe secret and restricted keys (gitleaks stripe-access-token,
	// detect-secrets stripe). Publishable pk_ keys are public and stay.
	rule("stripe", []string{"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"},
		`[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,}`),
	// AWS access key ids (gitleaks aws-access-token, detect-secrets aws).
	// gitleaks takes [A-Z2-7] after the prefix; we keep [A-Z0-9], as before,
	// so that documentation ids like AKIAIOSFODNN7EXAMPLE go as well.
	// AKIA/ASIA/ABIA hold an 'I' and so never occur in Continuo's Crockford
	// IDs; they stay unbounded. ACCA and A3T can, so they need a boundary
	// (an ID's prefix ends in '_').
	rule(awsID, []string{"AKIA", "ASIA", "ABIA"}, `A(?:KIA|SIA|BIA)[A-Z0-9]{16}`),
	rule(awsID, []string{"ACCA", "A3T"}, `(?:ACCA|A3T[A-Z0-9])[A-Z0-9]{16}`).withBound(20),
	// Google API keys (gitleaks gcp-api-key).
	rule("google-api-key", []string{"AIza"}, `AIza[0-9A-Za-z_-]{35}`),
	// JWTs (gitleaks jwt, detect-secrets jwt): header and payload are base64
	// JSON objects, so both start "eyJ".
	rule("jwt", []string{"eyJ"}, `eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`),
	// Grafana (gitleaks grafana-api-key, grafana-cloud-api-token,
	// grafana-service-account-token).
	rule("grafana", []string{"eyJrIjoi", "glc_", "glsa_"},
		`eyJrIjoi[A-Za-z0-9]{70,}={0,3}|glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`),
	// Hugging Face (gitleaks huggingface-access-token,
	// huggingface-organization-api-token): 34 letters; we also take digits.
	rule("huggingface", []string{"hf_", "api_org_"}, `(?:hf_|api_org_)[A-Za-z0-9]{34,}`),
	// npm (gitleaks npm-access-token; detect-secrets npm).
	rule("npm", []string{"npm_"}, `npm_[A-Za-z0-9]{36,}`),
	// PyPI and TestPyPI upload tokens (gitleaks pypi-upload-token,
	// detect-secrets pypi_token): macaroons whose base64 starts "AgE".
	rule("pypi", []string{"pypi-AgE"}, `pypi-AgE[A-Za-z0-9_-]{50,}`),
	// SendGrid (gitleaks sendgrid-api-token, detect-secrets sendgrid):
	// SG.<22>.<43>. Bounded as in gitleaks, since "SG." ends words.
	rule("sendgrid", []string{"SG."}, `SG\.[A-Za-z0-9_-]{16,128}\.[A-Za-z0-9_-]{16,128}`).withBound(260),
	// Twilio API keys (gitleaks twilio-api-key, detect-secrets twilio).
	// Bounded, unlike gitleaks: "SK" ends ordinary upper-case words.
	rule("twilio", []string{"SK"}, `SK[0-9a-fA-F]{32}`).withBound(34),
	// Mailgun private API keys (gitleaks mailgun-private-api-token, which
	// also wants the word "mailgun" nearby; the shape is distinctive enough).
	rule("mailgun", []string{"key-"}, `key-[0-9a-f]{32}`),
	// DigitalOcean (gitleaks digitalocean-pat, -access-token, -refresh-token).
	rule("digitalocean", []string{"dop_v1_", "doo_v1_", "dor_v1_"}, `do[opr]_v1_[a-f0-9]{64}`),
	// Shopify (gitleaks shopify-access-token, -custom-access-token,
	// -private-app-access-token, -shared-secret).
	rule("shopify", []string{"shpat_", "shpca_", "shppa_", "shpss_"}, `shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`),
	// Heroku API keys, v2 (gitleaks heroku-api-key-v2). v1 keys are bare
	// UUIDs: only a secret-named assignment (HEROKU_API_KEY=...) finds them.
	rule("heroku", []string{"HRKU-AA"}, `HRKU-AA[0-9A-Za-z_-]{58}`),
	// Azure AD client secrets (gitleaks azure-ad-client-secret): three
	// characters and a digit before "Q~".
	rule("azure-ad-client-secret", []string{"Q~"}, `[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}`),
	// age (gitleaks age-secret-key).
	rule("age", []string{"AGE-SECRET-KEY-1"}, `AGE-SECRET-KEY-1[0-9A-Z]{58}`),
	// 1Password (gitleaks 1password-service-account-token,
	// 1password-secret-key).
	rule("1password", []string{"ops_eyJ"}, `ops_eyJ[A-Za-z0-9+/]{250,}={0,3}`),
	rule("1password", []string{"A3-"}, `A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}`).withBound(40),
	// Atlassian API tokens (gitleaks atlassian-api-token, the ATATT3 form).
	rule("atlassian", []string{"ATATT3"}, `ATATT3[A-Za-z0-9_=-]{100,}`),
	// Artifactory (gitleaks artifactory-api-key; detect-secrets artifactory).
	rule("artifactory", []string{"AKCp"}, `AKCp[A-Za-z0-9]{69}`),
	// Databricks (gitleaks databricks-api-token).
	rule("databricks", []string{"dapi"}, `dapi[a-f0-9]{32}(?:-[0-9])?`),
	// Doppler (gitleaks doppler-api-token).
	rule("doppler", []string{"dp.pt."}, `dp\.pt\.[A-Za-z0-9]{43}`),
	// Dynatrace (gitleaks dynatrace-api-token).
	rule("dynatrace", []string{"dt0c01."}, `dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}`),
	// Fly.io (gitleaks flyio-access-token).
	rule("flyio", []string{"fo1_", "fm1a_", "fm1r_", "fm2_"},
		`fo1_[A-Za-z0-9_-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3}`),
	// HashiCorp Vault (gitleaks vault-service-token, vault-batch-token; the
	// legacy "s." form is too short to tell from prose) and Terraform Cloud
	// (gitleaks hashicorp-tf-api-token: 14 characters before ".atlasv1.").
	rule("hashicorp", []string{"hvs.", "hvb."}, `hvs\.[A-Za-z0-9_-]{90,}|hvb\.[A-Za-z0-9_-]{138,}`),
	rule("hashicorp", []string{".atlasv1."}, `[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}`),
	// Linear (gitleaks linear-api-key).
	rule("linear", []string{"lin_api_"}, `lin_api_[A-Za-z0-9]{40}`),
	// Notion (gitleaks notion-api-token).
	rule("notion", []string{"ntn_"}, `ntn_[0-9]{11}[A-Za-z0-9]{35}`),
	// Perplexity (gitleaks perplexity-api-key).
	rule("perplexity", []string{"pplx-"}, `pplx-[A-Za-z0-9]{48}`),
	// PlanetScale (gitleaks planetscale-api-token, -oauth-token, -password).
	rule("planetscale", []string{"pscale_tkn_", "pscale_oauth_", "pscale_pw_"}, `pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}`),
	// Postman (gitleaks postman-api-token).
	rule("postman", []string{"PMAK-"}, `PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}`),
	// Prefect (gitleaks prefect-api-token).
	rule("prefect", []string{"pnu_"}, `pnu_[A-Za-z0-9]{36}`),
	// Pulumi (gitleaks pulumi-api-token).
	rule("pulumi", []string{"pul-"}, `pul-[a-f0-9]{40}`),
	// ReadMe (gitleaks readme-api-token).
	rule("readme", []string{"rdme_"}, `rdme_[a-z0-9]{70}`),
	// RubyGems (gitleaks rubygems-api-token).
	rule("rubygems", []string{"rubygems_"}, `rubygems_[a-f0-9]{48}`),
	// Brevo, formerly Sendinblue (gitleaks sendinblue-api-token).
	rule("sendinblue", []string{"xkeysib-"}, `xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}`),
	// Sentry (gitleaks sentry-user-token, sentry-org-token).
	rule("sentry", []string{"sntryu_", "sntrys_"}, `sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{60,}`),
	// Shippo (gitleaks shippo-api-token).
	rule("shippo", []string{"shippo_live_", "shippo_test_"}, `shippo_(?:live|test)_[a-fA-F0-9]{40}`),
	// Sourcegraph (gitleaks sourcegraph-access-token, the sgp_ forms).
	rule("sourcegraph", []string{"sgp_"}, `sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}`),
	// Square (gitleaks square-access-token; detect-secrets square_oauth).
	rule("square", []string{"sq0atp-", "sq0csp-"}, `sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}`),
	rule("square", []string{"EAAA"}, `EAAA[A-Za-z0-9_-]{22,60}`).withBound(64),
	// Facebook page access tokens (gitleaks facebook-page-access-token).
	rule("facebook", []string{"EAAM", "EAAC"}, `EAA[MC][A-Za-z0-9]{100,}`),
	// Alibaba Cloud access key ids (gitleaks alibaba-access-key-id).
	rule("alibaba", []string{"LTAI"}, `LTAI[A-Za-z0-9]{20}`).withBound(24),
	// Adobe client secrets (gitleaks adobe-client-secret).
	rule("adobe", []string{"p8e-"}, `p8e-[A-Za-z0-9]{32}`),
	// Infracost (gitleaks infracost-api-token).
	rule("infracost", []string{"ico-"}, `ico-[A-Za-z0-9]{32}`),
	// Duffel (gitleaks duffel-api-token).
	rule("duffel", []string{"duffel_test_", "duffel_live_"}, `duffel_(?:test|live)_[A-Za-z0-9_=-]{43}`),
	// Frame.io (gitleaks frameio-api-token).
	rule("frameio", []string{"fio-u-"}, `fio-u-[A-Za-z0-9_=-]{64}`),
	// EasyPost (gitleaks easypost-api-token, easypost-test-api-token).
	rule("easypost", []string{"EZAK", "EZTK"}, `EZ[AT]K[A-Za-z0-9]{54}`),
	// Clojars (gitleaks clojars-api-token).
	rule("clojars", []string{"CLOJARS_"}, `CLOJARS_[A-Za-z0-9]{60}`),
	// OpenShift user tokens (gitleaks openshift-user-token).
	rule("openshift", []string{"sha256~"}, `sha256~[A-Za-z0-9_-]{43}`),
	// Cloudflare origin CA keys (gitleaks cloudflare-origin-ca-key).
	rule("cloudflare", []string{"v1.0-"}, `v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`),
	// SettleMint (gitleaks settlemint-*-access-token).
	rule("settlemint", []string{"sm_pat_", "sm_aat_", "sm_sat_"}, `sm_[aps]at_[A-Za-z0-9]{16}`),
	// Scalingo (gitleaks scalingo-api-token).
	rule("scalingo", []string{"tk-us-"}, `tk-us-[A-Za-z0-9_-]{48}`),
	// Harness (gitleaks harness-api-key).
	rule("harness", []string{"pat.", "sat."}, `(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}`),
}

// candidate is one prefix of one rule, filed under the prefix's first two
// bytes.
type candidate struct {
	prefix string
	rule   int // index in tokenRules
}

// tokenIndex maps the first two bytes of every prefix to its candidates
// (tokenBuckets[tokenIndex[..]]), so that one pass over the text with a
// table look-up per byte finds which rules can match at all, instead of one
// search per prefix, or one regexp with dozens of alternatives.
var (
	tokenIndex   [1 << 16]uint8
	tokenBuckets = [][]candidate{nil} // bucket 0: no prefix starts here
)

func init() {
	if len(tokenRules) > 128 {
		panic("redact: more token rules than the active set holds")
	}
	for i, r := range tokenRules {
		for _, p := range r.prefixes {
			k := uint16(p[0])<<8 | uint16(p[1])
			if tokenIndex[k] == 0 {
				if len(tokenBuckets) == 256 {
					panic("redact: too many token prefixes for the index")
				}
				tokenIndex[k] = uint8(len(tokenBuckets))
				tokenBuckets = append(tokenBuckets, nil)
			}
			b := tokenIndex[k]
			tokenBuckets[b] = append(tokenBuckets[b], candidate{p, i})
		}
	}
}

// span is a byte range to replace with the placeholder.
type span struct{ start, end int }

func redactTokens(s string) string {
	s = replaceSpans(s, tokenSpans(s))
	// Continuo's own tokens run last: they are the one shape that looks at
	// its left neighbour, so every other replacement must already be done.
	return redactContinuoTokens(s)
}

// tokenSpans returns the spans of every token in s, in no particular order
// and possibly overlapping (replaceSpans joins them), and the AWS secret keys
// next to access key ids.
//
// One pass finds the prefixes present. Each rule with a prefix present then
// finds its matches over the whole text, as RE2 does, in linear time, and the
// matches of all rules are joined: a span any rule matched goes. Trying every
// rule at every prefix instead would cost the length of a run per prefix in
// it ("sk-sk-sk-..." is one run of key characters): quadratic.
//
// A bounded rule is tried at each of its prefixes, and kept where the byte
// before is no letter, digit or '_' — or where another match ends, because on
// a second pass that byte is the placeholder's ']', which is a boundary.
// (Later stages never end a replacement right before a letter or digit: their
// values run through them.)
func tokenSpans(s string) []span {
	var active [2]uint64
	var bounded []span
	var boundedAWS []bool
	for i := 0; i+1 < len(s); i++ {
		b := tokenIndex[uint16(s[i])<<8|uint16(s[i+1])]
		if b == 0 {
			continue
		}
		for _, c := range tokenBuckets[b] {
			if !strings.HasPrefix(s[i:], c.prefix) {
				continue
			}
			r := &tokenRules[c.rule]
			if !r.bounded {
				active[c.rule/64] |= 1 << (c.rule % 64)
				continue
			}
			if m := r.re.FindStringIndex(s[i:min(len(s), i+r.maxLen)]); m != nil {
				bounded = append(bounded, span{i, i + m[1]})
				boundedAWS = append(boundedAWS, r.id == awsID)
			}
		}
	}
	var spans, aws []span
	for ri := range tokenRules {
		if active[ri/64]&(1<<(ri%64)) == 0 {
			continue
		}
		r := &tokenRules[ri]
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			sp := span{m[0], m[1]}
			if len(m) > 2 && m[2] >= 0 {
				sp = span{m[2], m[3]}
			}
			spans = append(spans, sp)
			if r.id == awsID {
				aws = append(aws, sp)
			}
		}
	}
	if bounded != nil {
		ends := make(map[int]bool, len(spans))
		for _, sp := range spans {
			ends[sp.end] = true
		}
		for k, sp := range bounded { // in order of start
			if sp.start > 0 && isWordByte(s[sp.start-1]) && !ends[sp.start] {
				continue
			}
			spans = append(spans, sp)
			ends[sp.end] = true
			if boundedAWS[k] {
				aws = append(aws, sp)
			}
		}
	}
	if aws != nil {
		spans = append(spans, awsSecrets(s, aws)...)
	}
	return spans
}

// awsNear is how far from an access key id its secret key is looked for.
const awsNear = 256

// awsSecrets finds the secret access key that travels with an access key id
// without a label ("AKIA... wJalr...", a CSV row): a run of exactly 40
// base64 characters with both upper- and lower-case letters (git hashes are
// hex of one case), reaching within awsNear bytes before or after an id; and
// there any run of 100 or more, which is an STS session token. gitleaks and
// detect-secrets find the secret only by its name (aws_secret_access_key =
// ...), which the assignment rule also does; this rule is ours.
//
// It does not make String depend on the text's history: the ids are removed
// in the same pass, so a second pass has no id and finds nothing new. Every
// byte is looked at once, however many ids there are.
func awsSecrets(s string, ids []span) []span {
	slices.SortFunc(ids, func(a, b span) int { return a.start - b.start })
	merged := ids[:1]
	for _, id := range ids[1:] { // bounded and unbounded ids may overlap
		if last := &merged[len(merged)-1]; id.start < last.end {
			last.end = max(last.end, id.end)
		} else {
			merged = append(merged, id)
		}
	}
	ids = merged
	var out []span
	next := 0 // bytes before next have been looked at
	for _, id := range ids {
		j := max(next, id.start-awsNear)
		hi := min(len(s), id.end+awsNear)
		for j > next && isBase64Byte(s[j-1]) { // a run that reaches into the window
			j--
		}
		for j < hi {
			if !isBase64Byte(s[j]) {
				j++
				continue
			}
			k := j
			for k < len(s) && isBase64Byte(s[k]) {
				k++
			}
			if run := s[j:k]; !overlapsAny(ids, j, k) &&
				((len(run) == 40 && hasUpper(run) && hasLower(run)) || len(run) >= 100) {
				out = append(out, span{j, k})
			}
			j = k
		}
		next = max(next, j)
	}
	return out
}

// overlapsAny reports whether [start, end) overlaps one of the sorted,
// disjoint spans.
func overlapsAny(spans []span, start, end int) bool {
	i, _ := slices.BinarySearchFunc(spans, start, func(sp span, t int) int {
		if sp.end <= t {
			return -1
		}
		return 1
	})
	return i < len(spans) && spans[i].start < end
}

func isBase64Byte(c byte) bool { return isLetter(c) || isDigit(c) || c == '+' || c == '/' }
func isWordByte(c byte) bool   { return isLetter(c) || isDigit(c) || c == '_' }

func hasUpper(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0
}
func hasLower(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0
}

// replaceSpans replaces every span with the placeholder. Spans may come in
// any order and overlap; overlapping ones are replaced as one. A span that
// already is the placeholder stays, which keeps rules idempotent.
func replaceSpans(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.end - b.end
	})
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	changed := false
	for i := 0; i < len(spans); i++ {
		sp := spans[i]
		for i+1 < len(spans) && spans[i+1].start < sp.end {
			i++
			sp.end = max(sp.end, spans[i].end)
		}
		if sp.start < last || sp.start == sp.end || s[sp.start:sp.end] == Placeholder {
			continue
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(Placeholder)
		last = sp.end
		changed = true
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactContinuoTokens removes Continuo tokens: "cto_" and at least 16 token
// characters. Plain "cto_" needs a non-alphanumeric character (or the start
// of the text) before it, so identifiers like "de_facto_standard_for_all"
// survive; the documented personal-access-token form "cto_pat_" is redacted
// wherever it appears. This is a hand-written scan rather than a regexp
// because RE2 has no look-behind, and because a rejected candidate may hide
// a real token later in the same run ("de_facto_cto_pat_...").
func redactContinuoTokens(s string) string {
	const prefix, pat, minLen = "cto_", "cto_pat_", 16
	var b strings.Builder
	last, runEnd := 0, 0
	for i := 0; ; {
		k := strings.Index(s[i:], prefix)
		if k < 0 {
			break
		}
		o := i + k
		// All characters from a previous candidate to runEnd are token
		// characters, so a candidate inside that run ends where it does:
		// reusing runEnd keeps the scan linear on "xcto_xcto_xcto_...".
		if o >= runEnd {
			runEnd = o + len(prefix)
			for runEnd < len(s) && isTokenChar(s[runEnd]) {
				runEnd++
			}
		}
		body := runEnd - o - len(prefix)
		if body < minLen {
			i = runEnd // later candidates in this run are shorter still
			continue
		}
		boundary := o == 0 || !(isLetter(s[o-1]) || isDigit(s[o-1]))
		if !boundary && !(strings.HasPrefix(s[o:], pat) && runEnd-o-len(pat) >= minLen) {
			i = o + 1
			continue
		}
		b.WriteString(s[last:o])
		b.WriteString(Placeholder)
		last, i = runEnd, runEnd
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isTokenChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '-' }
