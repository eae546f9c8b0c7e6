#!/usr/bin/env bash
# Fails when an import crosses a boundary of the layout (CONTRIBUTING.md, "Layout"):
#
#   pkg/internal/<x>   small internals: import no other package of the module
#   pkg/apis/...       API types: pkg/apis, pkg/internal
#   pkg/contract/<x>   what the hub and the cluster side share: pkg/apis, pkg/contract, pkg/internal
#   pkg/hub/<x>        hub side: never pkg/spoke
#   pkg/spoke/<x>      cluster side: never pkg/hub
#   pkg/...            never test/ or hack/ (test files may use test/ fixtures)
#   hack/...           never test/ (tools built on the test harness live in test/tools)
#
# and when a hub reconciler (pkg/hub/<reconciler>, below) depends on another one, directly
# or through other packages of the module, tests included (`go list -deps -test`): each
# must build, test and change on its own, and only pkg/hub/manager wires them together.
# Run by `make verify`.
set -euo pipefail

cd "$(dirname "$0")/.."
go=${GO:-go}

mod=$("$go" list -m)
reconcilers=(propagation appstatus gitopscluster aggregation resourcetree)

# Every package of the module with its direct imports (non-test files): "pkg|imports".
failed=0
layering=$("$go" list -e -f '{{.ImportPath}}|{{join .Imports " "}}' ./... |
	awk -F'|' -v mod="$mod/" '
		function rel(p) { return index(p, mod) == 1 ? substr(p, length(mod) + 1) : "" }
		function under(p, dir) { return p == dir || index(p, dir "/") == 1 }
		# allowed(from, to): may package from (module-relative) import to?
		function allowed(from, to) {
			if (under(from, "pkg/internal")) return under(to, "pkg/internal")
			if (under(from, "pkg/apis")) return under(to, "pkg/apis") || under(to, "pkg/internal")
			if (under(from, "pkg/contract")) return under(to, "pkg/apis") || under(to, "pkg/contract") || under(to, "pkg/internal")
			if (under(from, "pkg/hub") && under(to, "pkg/spoke")) return 0
			if (under(from, "pkg/spoke") && under(to, "pkg/hub")) return 0
			if (under(from, "pkg") && (under(to, "test") || under(to, "hack"))) return 0
			if (under(from, "hack") && under(to, "test")) return 0
			return 1
		}
		{
			from = rel($1)
			if (from == "") next
			n = split($2, imports, " ")
			for (i = 1; i <= n; i++) {
				to = rel(imports[i])
				if (to != "" && !allowed(from, to)) print "  " from " imports " to
			}
		}' | sort -u)
if [[ -n "$layering" ]]; then
	echo "imports that cross the layout's boundaries:"
	echo "$layering"
	failed=1
fi

# Only the manager wires reconcilers: no other non-test package imports one.
wiring=$("$go" list -e -f '{{.ImportPath}}|{{join .Imports " "}}' ./... |
	awk -F'|' -v hub="$mod/pkg/hub/" -v mod="$mod/" -v list="${reconcilers[*]}" '
		BEGIN { n = split(list, r, " "); for (i = 1; i <= n; i++) isRec[hub r[i]] = 1 }
		function top(p,    rest, parts) {
			if (index(p, hub) != 1) return ""
			rest = substr(p, length(hub) + 1); split(rest, parts, "/"); return hub parts[1]
		}
		{
			from = $1
			if (from == mod "pkg/hub/manager" || index(from, mod "cmd/") == 1) next
			m = split($2, imports, " ")
			for (i = 1; i <= m; i++) {
				t = top(imports[i])
				if (t in isRec && top(from) != t) print "  " substr(from, length(mod) + 1) " imports " substr(imports[i], length(mod) + 1)
			}
		}' | sort -u)
if [[ -n "$wiring" ]]; then
	echo "only pkg/hub/manager may import a reconciler (${reconcilers[*]}):"
	echo "$wiring"
	failed=1
fi

hub="$mod/pkg/hub/"
for c in "${reconcilers[@]}"; do
	# One line per package in the graph: "<package>|<its imports>". Test variants are
	# named "p [p.test]", "p_test [p.test]" and "p.test"; their imports include those of
	# the test files.
	violations=$("$go" list -deps -test -f '{{.ImportPath}}|{{join .Imports " "}}' "./pkg/hub/$c/..." |
		awk -F'|' -v hub="$hub" -v mod="$mod/" -v c="$c" -v list="${reconcilers[*]}" '
			BEGIN { n = split(list, r, " "); for (i = 1; i <= n; i++) isRec[r[i]] = 1 }
			# owner: the reconciler directory a package path is in, "" outside one.
			function owner(p,    rest, parts) {
				sub(/ \[.*\]$/, "", p)
				if (index(p, hub) != 1) return ""
				rest = substr(p, length(hub) + 1)
				split(rest, parts, "/")
				sub(/(\.test|_test)$/, "", parts[1])
				return (parts[1] in isRec) ? parts[1] : ""
			}
			function short(p,    i) {
				while ((i = index(p, mod)) > 0) p = substr(p, 1, i - 1) substr(p, i + length(mod))
				return p
			}
			{
				from = $1
				fromOwner = owner(from)
				# Imports by another reconciler are that reconciler'"'"'s own finding: every
				# path into another reconciler enters it from this one or from a shared package.
				if (fromOwner != "" && fromOwner != c) next
				n = split($2, imports, " ")
				for (i = 1; i <= n; i++) {
					o = owner(imports[i])
					if (o != "" && o != c) found[from SUBSEP imports[i]] = 1
				}
			}
			END {
				for (edge in found) {
					split(edge, e, SUBSEP)
					from = e[1]
					if (from ~ /_test \[/) {
						who = short(substr(from, 1, index(from, " [") - 1)) " (external test package)"
					} else if (from ~ / \[/) {
						plain = substr(from, 1, index(from, " [") - 1)
						# The test variant also carries the package'"'"'s own imports: name only
						# what its _test.go files add.
						if ((plain SUBSEP e[2]) in found) continue
						who = short(plain) " (_test.go files)"
					} else {
						who = short(from)
					}
					print "  " who " imports " short(e[2])
				}
			}' | sort -u)
	if [[ -n "$violations" ]]; then
		echo "pkg/hub/$c depends on another hub reconciler's package:"
		echo "$violations"
		failed=1
	fi
done

if [[ $failed -ne 0 ]]; then
	echo "See CONTRIBUTING.md, \"Layout\", for where shared code belongs."
	exit 1
fi
echo "verify-imports: the layout's boundaries hold; no hub reconciler imports another (${reconcilers[*]})"
