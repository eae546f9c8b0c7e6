package framework

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics is one gathering of controller-runtime's registry (metrics.Registry), which
// the manager serves on /metrics and where this project's controllers and agent register
// theirs. Tests read what moved between two gatherings.
type Metrics map[string]*dto.MetricFamily

// GatherMetrics gathers every metric registered in metrics.Registry.
func GatherMetrics() (Metrics, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	out := make(Metrics, len(families))
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out, nil
}

// ScrapeMetrics reads the metrics a process serves at url (/metrics in Prometheus' text
// format), as Prometheus scrapes them.
func ScrapeMetrics(url string) (Metrics, error) { return ScrapeMetricsAs(url, "") }

// ScrapeMetricsAs is ScrapeMetrics with bearerToken ("" for none) in the Authorization
// header, as Prometheus scrapes a server behind controller-runtime's authentication and
// authorization filter. An https url's self-signed certificate is trusted.
func ScrapeMetricsAs(url, bearerToken string) (Metrics, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's certificate is self-signed
	}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if bearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+bearerToken)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", url, err)
	}
	return Metrics(families), nil
}

// HistogramCount is how many observations the histogram name holds, over every series
// whose labels include labels (name/value pairs).
func (m Metrics) HistogramCount(name string, labels ...string) uint64 {
	var n uint64
	for _, metric := range m.series(name, labels) {
		n += metric.GetHistogram().GetSampleCount()
	}
	return n
}

// HistogramSum is the sum of the observations of the histogram name over every series
// whose labels include labels (name/value pairs).
func (m Metrics) HistogramSum(name string, labels ...string) float64 {
	var sum float64
	for _, metric := range m.series(name, labels) {
		sum += metric.GetHistogram().GetSampleSum()
	}
	return sum
}

// Value is the sum of the counter or gauge name over every series whose labels include
// labels (name/value pairs).
func (m Metrics) Value(name string, labels ...string) float64 {
	var v float64
	for _, metric := range m.series(name, labels) {
		v += metric.GetCounter().GetValue() + metric.GetGauge().GetValue()
	}
	return v
}

// Has tells whether name was gathered.
func (m Metrics) Has(name string) bool {
	_, ok := m[name]
	return ok
}

func (m Metrics) series(name string, labels []string) []*dto.Metric {
	f, ok := m[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
	for _, metric := range f.GetMetric() {
		if hasLabels(metric, labels) {
			out = append(out, metric)
		}
	}
	return out
}

func hasLabels(metric *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range metric.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
