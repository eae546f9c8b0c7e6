#!/usr/bin/env bash
# Fails when a hub controller's packages depend on another hub controller's: every
# directory pkg/hub/<controller> is one controller (propagation, appstatus, gitopscluster,
# aggregation), and each must build, test and change on its own. Code two controllers
# share belongs outside pkg/hub/<controller> (pkg/hub itself or another pkg/ package),
# which is what this check tells apart.
#
# For each controller it walks the dependency graph of its packages and their tests
# (`go list -deps -test`: test files and external _test packages included), directly or
# through other packages of the module, and prints every import that enters another
# controller's directory. Run by `make verify`.
set -euo pipefail

cd "$(dirname "$0")/.."
go=${GO:-go}

mod=$("$go" list -m)
hub="$mod/pkg/hub/"

# The controllers: the first path element under pkg/hub of every package there.
mapfile -t controllers < <("$go" list -f '{{.ImportPath}}' ./pkg/hub/... |
	awk -v hub="$hub" 'index($0, hub) == 1 { split(substr($0, length(hub) + 1), p, "/"); print p[1] }' | sort -u)
if [[ ${#controllers[@]} -eq 0 ]]; then
	echo "verify-imports: no packages under pkg/hub" >&2
	exit 1
fi

failed=0
for c in "${controllers[@]}"; do
	# One line per package in the graph: "<package>|<its imports>". Test variants are
	# named "p [p.test]", "p_test [p.test]" and "p.test"; their imports include those of
	# the test files.
	violations=$("$go" list -deps -test -f '{{.ImportPath}}|{{join .Imports " "}}' "./pkg/hub/$c/..." |
		awk -F'|' -v hub="$hub" -v mod="$mod/" -v c="$c" '
			# owner: the controller directory a package path is in, "" outside pkg/hub/<x>.
			function owner(p,    rest, parts) {
				sub(/ \[.*\]$/, "", p)
				if (index(p, hub) != 1) return ""
				rest = substr(p, length(hub) + 1)
				split(rest, parts, "/")
				sub(/(\.test|_test)$/, "", parts[1])
				return parts[1]
			}
			function short(p,    i) {
				while ((i = index(p, mod)) > 0) p = substr(p, 1, i - 1) substr(p, i + length(mod))
				return p
			}
			{
				from = $1
				fromOwner = owner(from)
				# Imports by another controller are that controller'"'"'s own finding: every
				# path into another controller enters it from this one or from a shared package.
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
		echo "pkg/hub/$c depends on another hub controller's package:"
		echo "$violations"
		failed=1
	fi
done

if [[ $failed -ne 0 ]]; then
	echo "A hub controller must not import another (pkg/hub/<controller>): move what they share out of pkg/hub/<controller>."
	exit 1
fi
echo "verify-imports: no hub controller imports another (${controllers[*]})"
