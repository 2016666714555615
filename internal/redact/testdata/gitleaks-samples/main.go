// Command gitleaks-samples writes testdata/corpus/gitleaks.txt: for every
// rule of gitleaks' default configuration, true positives from the rule's
// own definition (the samples it is validated with in
// cmd/generate/config/rules), each with the secret gitleaks finds in it
// marked. The values are gitleaks' generated fakes, drawn with a fixed
// seed. Run it with gen.sh (it overlays two files of gitleaks to record the
// samples and to seed their generator).
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/base"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/rules"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/secrets"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// perRule is how many samples of each rule are kept.
const perRule = 2

func main() {
	configRules := []*config.Rule{
		rules.OnePasswordSecretKey(),
		rules.OnePasswordServiceAccountToken(),
		rules.AdafruitAPIKey(),
		rules.AdobeClientID(),
		rules.AdobeClientSecret(),
		rules.AgeSecretKey(),
		rules.AirtableApiKey(),
		rules.AirtablePersonalAccessToken(),
		rules.AlgoliaApiKey(),
		rules.AlibabaAccessKey(),
		rules.AlibabaSecretKey(),
		rules.AmazonBedrockAPIKeyLongLived(),
		rules.AmazonBedrockAPIKeyShortLived(),
		rules.AnthropicAdminApiKey(),
		rules.AnthropicApiKey(),
		rules.ArtifactoryApiKey(),
		rules.ArtifactoryReferenceToken(),
		rules.AsanaClientID(),
		rules.AsanaClientSecret(),
		rules.Atlassian(),
		rules.Authress(),
		rules.AWS(),
		rules.AzureActiveDirectoryClientSecret(),
		rules.BitBucketClientID(),
		rules.BitBucketClientSecret(),
		rules.BittrexAccessKey(),
		rules.BittrexSecretKey(),
		rules.Beamer(),
		rules.CodecovAccessToken(),
		rules.CoinbaseAccessToken(),
		rules.ClickHouseCloud(),
		rules.Clojars(),
		rules.CloudflareAPIKey(),
		rules.CloudflareGlobalAPIKey(),
		rules.CloudflareOriginCAKey(),
		rules.CohereAPIToken(),
		rules.ConfluentAccessToken(),
		rules.ConfluentSecretKey(),
		rules.Contentful(),
		rules.CurlHeaderAuth(),
		rules.CurlBasicAuth(),
		rules.Databricks(),
		rules.DatadogtokenAccessToken(),
		rules.DefinedNetworkingAPIToken(),
		rules.DigitalOceanPAT(),
		rules.DigitalOceanOAuthToken(),
		rules.DigitalOceanRefreshToken(),
		rules.DiscordAPIToken(),
		rules.DiscordClientID(),
		rules.DiscordClientSecret(),
		rules.Doppler(),
		rules.DropBoxAPISecret(),
		rules.DropBoxLongLivedAPIToken(),
		rules.DropBoxShortLivedAPIToken(),
		rules.DroneciAccessToken(),
		rules.Duffel(),
		rules.Dynatrace(),
		rules.EasyPost(),
		rules.EasyPostTestAPI(),
		rules.EtsyAccessToken(),
		rules.FacebookSecret(),
		rules.FacebookAccessToken(),
		rules.FacebookPageAccessToken(),
		rules.FastlyAPIToken(),
		rules.FinicityClientSecret(),
		rules.FinicityAPIToken(),
		rules.FlickrAccessToken(),
		rules.FinnhubAccessToken(),
		rules.FlutterwavePublicKey(),
		rules.FlutterwaveSecretKey(),
		rules.FlutterwaveEncKey(),
		rules.FlyIOAccessToken(),
		rules.FrameIO(),
		rules.Freemius(),
		rules.FreshbooksAccessToken(),
		rules.GoCardless(),
		// TODO figure out what makes sense for GCP
		// rules.GCPServiceAccount(),
		rules.GCPAPIKey(),
		rules.GitHubPat(),
		rules.GitHubFineGrainedPat(),
		rules.GitHubOauth(),
		rules.GitHubApp(),
		rules.GitHubRefresh(),
		rules.GitlabCiCdJobToken(),
		rules.GitlabDeployToken(),
		rules.GitlabFeatureFlagClientToken(),
		rules.GitlabFeedToken(),
		rules.GitlabIncomingMailToken(),
		rules.GitlabKubernetesAgentToken(),
		rules.GitlabOauthAppSecret(),
		rules.GitlabPat(),
		rules.GitlabPatRoutable(),
		rules.GitlabPipelineTriggerToken(),
		rules.GitlabRunnerRegistrationToken(),
		rules.GitlabRunnerAuthenticationToken(),
		rules.GitlabRunnerAuthenticationTokenRoutable(),
		rules.GitlabScimToken(),
		rules.GitlabSessionCookie(),
		rules.GitterAccessToken(),
		rules.GrafanaApiKey(),
		rules.GrafanaCloudApiToken(),
		rules.GrafanaServiceAccountToken(),
		rules.HarnessApiKey(),
		rules.HashiCorpTerraform(),
		rules.HashicorpField(),
		rules.Heroku(),
		rules.HerokuV2(),
		rules.HubSpot(),
		rules.HuggingFaceAccessToken(),
		rules.HuggingFaceOrganizationApiToken(),
		rules.Intercom(),
		rules.Intra42ClientSecret(),
		rules.JFrogAPIKey(),
		rules.JFrogIdentityToken(),
		rules.JWT(),
		rules.JWTBase64(),
		rules.KrakenAccessToken(),
		rules.KubernetesSecret(),
		rules.KucoinAccessToken(),
		rules.KucoinSecretKey(),
		rules.LaunchDarklyAccessToken(),
		rules.LinearAPIToken(),
		rules.LinearClientSecret(),
		rules.LinkedinClientID(),
		rules.LinkedinClientSecret(),
		rules.LobAPIToken(),
		rules.LobPubAPIToken(),
		rules.LookerClientID(),
		rules.LookerClientSecret(),
		rules.MailChimp(),
		rules.MailGunPubAPIToken(),
		rules.MailGunPrivateAPIToken(),
		rules.MailGunSigningKey(),
		rules.MapBox(),
		rules.MattermostAccessToken(),
		rules.MaxMindLicenseKey(),
		rules.Meraki(),
		rules.MessageBirdAPIToken(),
		rules.MessageBirdClientID(),
		rules.NetlifyAccessToken(),
		rules.NewRelicUserID(),
		rules.NewRelicUserKey(),
		rules.NewRelicBrowserAPIKey(),
		rules.NewRelicInsertKey(),
		rules.Notion(),
		rules.NPM(),
		rules.NugetConfigPassword(),
		rules.NytimesAccessToken(),
		rules.OctopusDeployApiKey(),
		rules.OktaAccessToken(),
		rules.OpenAI(),
		rules.OpenshiftUserToken(),
		rules.PerplexityAPIKey(),
		rules.PlaidAccessID(),
		rules.PlaidSecretKey(),
		rules.PlaidAccessToken(),
		rules.PlanetScalePassword(),
		rules.PlanetScaleAPIToken(),
		rules.PlanetScaleOAuthToken(),
		rules.PostManAPI(),
		rules.Prefect(),
		rules.PrivateAIToken(),
		rules.PrivateKey(),
		rules.PrivateKeyPKCS12File(),
		rules.PulumiAPIToken(),
		rules.PyPiUploadToken(),
		rules.RapidAPIAccessToken(),
		rules.ReadMe(),
		rules.RubyGemsAPIToken(),
		rules.ScalingoAPIToken(),
		rules.SendbirdAccessID(),
		rules.SendbirdAccessToken(),
		rules.SendGridAPIToken(),
		rules.SendInBlueAPIToken(),
		rules.SentryAccessToken(),
		rules.SentryOrgToken(),
		rules.SentryUserToken(),
		rules.SettlemintApplicationAccessToken(),
		rules.SettlemintPersonalAccessToken(),
		rules.SettlemintServiceAccessToken(),
		rules.ShippoAPIToken(),
		rules.ShopifyAccessToken(),
		rules.ShopifyCustomAccessToken(),
		rules.ShopifyPrivateAppAccessToken(),
		rules.ShopifySharedSecret(),
		rules.SidekiqSecret(),
		rules.SidekiqSensitiveUrl(),
		rules.SlackBotToken(),
		rules.SlackUserToken(),
		rules.SlackAppLevelToken(),
		rules.SlackConfigurationToken(),
		rules.SlackConfigurationRefreshToken(),
		rules.SlackLegacyBotToken(),
		rules.SlackLegacyWorkspaceToken(),
		rules.SlackLegacyToken(),
		rules.SlackWebHookUrl(),
		rules.Snyk(),
		rules.Sonar(),
		rules.SourceGraph(),
		rules.StripeAccessToken(),
		rules.SquareAccessToken(),
		rules.SquareSpaceAccessToken(),
		rules.SumoLogicAccessID(),
		rules.SumoLogicAccessToken(),
		rules.TeamsWebhook(),
		rules.TelegramBotToken(),
		rules.TravisCIAccessToken(),
		rules.Twilio(),
		rules.TwitchAPIToken(),
		rules.TwitterAPIKey(),
		rules.TwitterAPISecret(),
		rules.TwitterAccessToken(),
		rules.TwitterAccessSecret(),
		rules.TwitterBearerToken(),
		rules.Typeform(),
		rules.VaultBatchToken(),
		rules.VaultServiceToken(),
		rules.YandexAPIKey(),
		rules.YandexAWSAccessToken(),
		rules.YandexAccessToken(),
		rules.ZendeskSecretKey(),
		rules.GenericCredential(),
		rules.InfracostAPIToken(),
	}
	// Rules whose definition validates no sample (dropbox's, "validate
	// TODO") get texts generated from their whole expression.
	recorded := map[string]bool{}
	for _, s := range utils.Recorded {
		recorded[s.Rule.RuleID] = true
	}
	for _, r := range configRules {
		if recorded[r.RuleID] || r.Regex == nil {
			continue
		}
		var tps []string
		for range 2 {
			tps = append(tps, secrets.NewSecret(r.Regex.String()))
		}
		utils.Recorded = append(utils.Recorded, utils.Sample{Rule: *r, TruePositives: tps, Paths: make([]string, len(tps))})
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintln(w, "# Credentials of gitleaks' own rule definitions (v8.30.1, cmd/generate/config/rules):")
	fmt.Fprintln(w, "# up to two true positives of each rule, the secret gitleaks finds marked.")
	fmt.Fprintln(w, "# Generated by testdata/gitleaks-samples (gen.sh); do not edit. Read by TestCorpus.")
	fmt.Fprintln(w, "# Every value is one of gitleaks' generated fakes.")
	n := 0
	for _, s := range utils.Recorded {
		d := detector(s.Rule)
		kept := 0
		for _, i := range pick(len(s.TruePositives)) {
			tp := s.TruePositives[i]
			if kept == perRule {
				break
			}
			if !usable(tp) {
				continue
			}
			var secrets []string
			for _, f := range d.Detect(detect.Fragment{Raw: tp, FilePath: s.Paths[i]}) {
				if f.Secret != "" && strings.Contains(tp, f.Secret) {
					secrets = append(secrets, f.Secret)
				}
			}
			if len(secrets) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n@ %s gitleaks:%s (true positive %d)\n%s\n", s.Rule.RuleID, s.Rule.RuleID, i+1, mark(tp, secrets))
			kept++
			n++
		}
		if kept == 0 {
			fmt.Fprintf(os.Stderr, "no usable sample of %s\n", s.Rule.RuleID)
		}
	}
	fmt.Fprintf(os.Stderr, "%d samples of %d rules\n", n, len(utils.Recorded))
}

// pick orders the indexes of a rule's n samples: the first, the last, then
// the rest, so that two differ when they can.
func pick(n int) []int {
	out := []int{}
	if n > 0 {
		out = append(out, 0)
	}
	if n > 1 {
		out = append(out, n-1)
	}
	for i := 1; i < n-1; i++ {
		out = append(out, i)
	}
	return out
}

var template = regexp.MustCompile(`\{\{[A-Za-z0-9]+:[0-9]+\}\}`)

// usable: the corpus format reads "#" and "@ " at the start of a line, the
// markers and {{class:n}}; a sample holding them is not written.
func usable(tp string) bool {
	for _, l := range strings.Split(tp, "\n") {
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "@ ") {
			return false
		}
	}
	return !strings.ContainsAny(tp, "⟦⟧") && !template.MatchString(tp) && strings.TrimSpace(tp) != ""
}

// mark wraps the first occurrence of each secret in ⟦⟧.
func mark(tp string, secrets []string) string {
	type span struct{ start, end int }
	var spans []span
	for _, s := range secrets {
		i := strings.Index(tp, s)
		overlap := false
		for _, sp := range spans {
			if i < sp.end && sp.start < i+len(s) {
				overlap = true
			}
		}
		if !overlap {
			spans = append(spans, span{i, i + len(s)})
		}
	}
	var b strings.Builder
	last := 0
	for len(spans) > 0 {
		k := 0
		for j := range spans {
			if spans[j].start < spans[k].start {
				k = j
			}
		}
		b.WriteString(tp[last:spans[k].start])
		b.WriteString("⟦" + tp[spans[k].start:spans[k].end] + "⟧")
		last = spans[k].end
		spans = append(spans[:k], spans[k+1:]...)
	}
	b.WriteString(tp[last:])
	return b.String()
}

// detector is gitleaks' detector of one rule, as utils.Validate builds it.
func detector(r config.Rule) *detect.Detector {
	var kws []string
	seen := map[string]struct{}{}
	for _, k := range r.Keywords {
		k = strings.ToLower(k)
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			kws = append(kws, k)
		}
	}
	r.Keywords = kws
	cfg := base.CreateGlobalConfig()
	cfg.Rules = map[string]config.Rule{r.RuleID: r}
	cfg.Keywords = seen
	for _, a := range cfg.Allowlists {
		if err := a.Validate(); err != nil {
			panic(err)
		}
	}
	return detect.NewDetector(cfg)
}
