package apps

// AddonName is the OCM addon's name: the ClusterManagementAddOn, every
// ManagedClusterAddOn, the addon's registration groups and its agent Lease carry it.
const AddonName = "argocd-pull"
