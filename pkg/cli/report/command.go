// Package report is the `report` subcommand: the MulticlusterApplicationSetReports of one
// ApplicationSet or all, as a per-cluster table (pkg/reporttable) or the report objects,
// filtered, once or on every change. It reads the hub like kubectl does, with
// cli-runtime's kubeconfig flags and printers.
package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/reporttable"
)

// options are the command's flags and arguments.
type options struct {
	configFlags   *genericclioptions.ConfigFlags
	printFlags    *genericclioptions.PrintFlags
	allNamespaces bool
	watch         bool
	filter        reporttable.Filter
}

// NewCommand is `report`; commandName is how the user invoked the binary
// ("argocd-pull-addon" or "kubectl argocd-pull"), for the examples.
func NewCommand(commandName string) *cobra.Command {
	o := &options{
		configFlags: genericclioptions.NewConfigFlags(true),
		printFlags:  genericclioptions.NewPrintFlags("").WithTypeSetter(scheme()),
	}
	// --cluster names managed clusters here (the filter); kubectl's --cluster (a kubeconfig
	// cluster) is left out: --context selects one.
	o.configFlags.ClusterName = nil
	// The client discovers what it needs itself: no discovery cache on disk.
	o.configFlags.CacheDir = nil
	cmd := &cobra.Command{
		Use:   "report [APPLICATIONSET]",
		Short: "Print the per-cluster report of an ApplicationSet, or of all",
		Long: `Print the MulticlusterApplicationSetReport of an ApplicationSet as a table with a row per
cluster (sync, health, whether the cluster's agent is available, errors) and the report's
summary, or the reports of every ApplicationSet of the namespace (of all namespaces with
-A). It reads the hub with the current kubeconfig context, as kubectl does.

--attention and --cluster keep only some entries; the summary still counts every cluster.
With -o json or -o yaml they print the report objects with statuses.clusterConditions
narrowed to the entries kept (without an ApplicationSet name, reports left with no entry
are left out). --watch prints again whenever what it prints changes, from a watch on the
reports, until interrupted.`,
		Example: strings.NewReplacer("CMD", commandName).Replace(`  # The guestbook's report, a row per cluster
  CMD report guestbook-app -n argocd

  # Every report of every namespace, only the clusters that need attention
  CMD report -A --attention

  # Two clusters, with operation, revision, age of the report, delivery and failing resources
  CMD report guestbook-app -n argocd --cluster cluster1,cluster2 -o wide

  # The report object itself; again on every change
  CMD report guestbook-app -n argocd -o yaml --watch`),
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, args, cmd.OutOrStdout())
		},
	}
	o.configFlags.AddFlags(cmd.Flags())
	o.printFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: the table (default), wide (more columns), or one of " +
		strings.Join(o.printFlags.AllowedFormats(), ", ") + " (the report objects)."
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false,
		"Print the reports of every namespace instead of the current one.")
	cmd.Flags().BoolVar(&o.filter.Attention, "attention", false,
		"Only the entries that need attention: not Synced, not Healthy, agent unavailable, or with any condition.")
	cmd.Flags().StringSliceVar(&o.filter.Clusters, "cluster", nil,
		"Only the entries of these managed clusters (repeat the flag or separate names with commas).")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false,
		"After printing, watch the reports and print again whenever what is printed changes.")
	return cmd
}

// scheme has the report's types, for the client and for the printers' apiVersion and kind.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := appsv1alpha1.AddToScheme(s); err != nil {
		panic(err) // a registration error of the API package itself
	}
	return s
}

// query is what to read: one report (name set) or all of a namespace ("" for every one).
type query struct {
	namespace, name string
}

func (o *options) run(ctx context.Context, args []string, out io.Writer) error {
	q, err := o.query(args)
	if err != nil {
		return err
	}
	v, err := o.view(q)
	if err != nil {
		return err
	}
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return fmt.Errorf("creating a client of %s: %w", cfg.Host, err)
	}
	if o.watch {
		return watchReports(ctx, c, q, v, out)
	}
	reports, err := readReports(ctx, c, q)
	if err != nil {
		return err
	}
	text, err := v.render(reports)
	if err != nil {
		return err
	}
	_, err = out.Write(text)
	return err
}

func (o *options) query(args []string) (query, error) {
	q := query{}
	if len(args) == 1 {
		q.name = args[0]
	}
	if o.allNamespaces {
		if q.name != "" {
			return q, errors.New("an ApplicationSet name and --all-namespaces do not go together: name its namespace with -n")
		}
		return q, nil
	}
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return q, fmt.Errorf("reading the namespace of the kubeconfig context: %w", err)
	}
	q.namespace = ns
	return q, nil
}

// view is o's way of printing reports.
func (o *options) view(q query) (*view, error) {
	v := &view{query: q, filter: o.filter, allNamespaces: o.allNamespaces}
	switch format := *o.printFlags.OutputFormat; format {
	case "", "wide":
		v.wide = format == "wide"
	default:
		p, err := o.printFlags.ToPrinter()
		if err != nil {
			return nil, err
		}
		v.objects = p
	}
	return v, nil
}

// readReports gets the report of q's ApplicationSet, or lists q's namespace.
func readReports(ctx context.Context, c client.Reader, q query) ([]appsv1alpha1.MulticlusterApplicationSetReport, error) {
	if q.name != "" {
		r := &appsv1alpha1.MulticlusterApplicationSetReport{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: q.namespace, Name: q.name}, r); err != nil {
			return nil, fmt.Errorf("reading the report of ApplicationSet %s in namespace %s: %w", q.name, q.namespace, err)
		}
		return []appsv1alpha1.MulticlusterApplicationSetReport{*r}, nil
	}
	list := &appsv1alpha1.MulticlusterApplicationSetReportList{}
	if err := c.List(ctx, list, client.InNamespace(q.namespace)); err != nil {
		return nil, fmt.Errorf("listing MulticlusterApplicationSetReports: %w", err)
	}
	return list.Items, nil
}
