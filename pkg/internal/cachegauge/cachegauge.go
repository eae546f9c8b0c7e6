// Package cachegauge exposes gauges counted from the manager's cache when Prometheus
// scrapes, so a count is never a stale copy kept beside the objects it counts.
package cachegauge

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scrapeTimeout bounds the cache reads of one scrape. A started cache answers from
// memory; only a cache not synced yet makes a read wait.
const scrapeTimeout = 5 * time.Second

// Count is the value of the gauge for one combination of label values, in the order of
// the gauge's label names.
type Count struct {
	LabelValues []string
	Value       float64
}

// CountFunc counts from reader. It returns every label combination it knows of, zeros
// included, so a dashboard shows 0 rather than no data.
type CountFunc func(ctx context.Context, reader client.Reader) ([]Count, error)

// Gauge is a prometheus.Collector of one gauge vector computed by a CountFunc. Until
// Read gives it a reader it collects nothing.
type Gauge struct {
	desc   *prometheus.Desc
	count  CountFunc
	reader atomic.Pointer[readerBox]
}

type readerBox struct{ client.Reader }

var _ prometheus.Collector = &Gauge{}

// New returns a Gauge named name, with help and label names, counted by count.
func New(name, help string, labels []string, count CountFunc) *Gauge {
	return &Gauge{desc: prometheus.NewDesc(name, help, labels, nil), count: count}
}

// Read makes the gauge count from reader (the manager's cache) from now on. The
// controllers call it in their Setup; a test that starts a new manager replaces the
// reader of the one before.
func (g *Gauge) Read(reader client.Reader) {
	g.reader.Store(&readerBox{reader})
}

// Describe implements prometheus.Collector.
func (g *Gauge) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.desc
}

// Collect implements prometheus.Collector. A failed count is logged and leaves the gauge
// out of this scrape, which Prometheus shows as absent rather than wrong.
func (g *Gauge) Collect(ch chan<- prometheus.Metric) {
	box := g.reader.Load()
	if box == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := g.count(ctx, box.Reader)
	if err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Counting a gauge from the cache", "gauge", g.desc.String())
		return
	}
	for _, c := range counts {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, c.Value, c.LabelValues...)
	}
}
