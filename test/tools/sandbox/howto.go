package main

import (
	"fmt"
	"io"
	"os"
)

// printHowTo prints how to look at the fleet with kubectl, where the logs are and how to
// stop. viaNSEnter: the kubeconfigs name the API servers inside the fleet's network
// namespace (the sandbox runs under `unshare --net`), so kubectl has to enter it. keptDir
// is the sandbox's directory when it outlives the sandbox (--dir or --keep). binary is
// the argocd-pull-addon binary the fleet runs, for its report command.
func printHowTo(w io.Writer, access []apiServerAccess, binary string, logs []string, viaNSEnter bool, keptDir string) {
	kubectl, report := kubectlCommand(), underWorkdir(binary)+" report"
	if viaNSEnter {
		enter := fmt.Sprintf("nsenter --net=/proc/%d/ns/net ", os.Getpid())
		kubectl, report = enter+kubectl, enter+report
		fmt.Fprintln(w, "The fleet runs in this process's private network namespace: enter it to reach the API servers.")
	}
	hub, clusters := access[0], access[1:]
	fmt.Fprintf(w, "The hub (kubeconfig %s):\n", hub.Kubeconfig)
	fmt.Fprintf(w, "  %s guestbook-app -n argocd --kubeconfig %s --watch\n", report, hub.Kubeconfig)
	fmt.Fprintf(w, "  %s --kubeconfig %s get multiclusterapplicationsetreports -n argocd -o yaml\n", kubectl, hub.Kubeconfig)
	fmt.Fprintf(w, "  %s --kubeconfig %s get applications -n argocd\n", kubectl, hub.Kubeconfig)
	fmt.Fprintf(w, "  %s --kubeconfig %s get managedclusters,manifestworks -A\n", kubectl, hub.Kubeconfig)
	for _, c := range clusters {
		fmt.Fprintf(w, "Cluster %s (kubeconfig %s):\n", c.Name, c.Kubeconfig)
		fmt.Fprintf(w, "  %s --kubeconfig %s get applications -n argocd\n", kubectl, c.Kubeconfig)
		// No kubelet runs: the Deployment is there, its pods are not.
		fmt.Fprintf(w, "  %s --kubeconfig %s get all,configmaps -n guestbook\n", kubectl, c.Kubeconfig)
	}
	fmt.Fprintln(w, "Logs:")
	for _, l := range logs {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w, "\nThe sandbox keeps running and prints the report again when it changes.")
	if keptDir == "" {
		fmt.Fprintln(w, "Ctrl-C stops the sandbox and removes everything.")
	} else {
		fmt.Fprintf(w, "Ctrl-C stops the sandbox and everything it started; %s stays.\n", keptDir)
	}
}
