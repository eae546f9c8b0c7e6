package ociimage

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The Dockerfile builds the image `make image` builds, with a container engine: this test
// holds the two to the same binary build, user, entrypoint and labels.
func TestDockerfileMatchesImageBuilder(t *testing.T) {
	dockerfile := readRepoFile(t, "Dockerfile")
	makefile := readRepoFile(t, "Makefile")
	instructions := dockerInstructions(dockerfile)

	finalStage := instructions[lastIndex(instructions, "FROM "):]
	for _, want := range []string{
		"USER " + User,
		`ENTRYPOINT ["` + BinaryPath + `"]`,
		"COPY --from=build /out/argocd-pull-addon " + BinaryPath,
	} {
		if !slices.Contains(finalStage, want) {
			t.Errorf("the Dockerfile's final stage has no %q", want)
		}
	}

	source := regexp.MustCompile(`(?m)^IMAGE_SOURCE \?= (\S+)$`).FindStringSubmatch(makefile)
	if source == nil {
		t.Fatal("the Makefile sets no IMAGE_SOURCE")
	}
	wantLabels := Spec{Version: "${VERSION}", Revision: "${COMMIT}", Source: source[1]}.Labels()
	gotLabels := map[string]string{}
	for _, instruction := range finalStage {
		if rest, ok := strings.CutPrefix(instruction, "LABEL "); ok {
			for _, kv := range regexp.MustCompile(`(\S+)="([^"]*)"`).FindAllStringSubmatch(rest, -1) {
				gotLabels[kv[1]] = kv[2]
			}
		}
	}
	if diff := cmp.Diff(wantLabels, gotLabels); diff != "" {
		t.Errorf("the Dockerfile's labels (-want: the image builder's +got):\n%s", diff)
	}

	// The binary: static, cross-compiled for the target platform, stamped with the same
	// version variables as the Makefile's LDFLAGS.
	var build string
	for _, instruction := range instructions {
		if strings.HasPrefix(instruction, "RUN ") && strings.Contains(instruction, "go build") {
			build = instruction
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=${TARGETOS}", "GOARCH=${TARGETARCH}", "-trimpath", "-s -w"} {
		if !strings.Contains(build, want) {
			t.Errorf("the Dockerfile's go build has no %s: %q", want, build)
		}
	}
	ldflagsBlock, _, _ := strings.Cut(makefile[strings.Index(makefile, "\nLDFLAGS := "):], "\n\n")
	xFlag := regexp.MustCompile(`-X (\S+?)=`)
	var makeVars, dockerVars []string
	for _, m := range xFlag.FindAllStringSubmatch(ldflagsBlock, -1) {
		makeVars = append(makeVars, m[1])
	}
	for _, m := range xFlag.FindAllStringSubmatch(build, -1) {
		dockerVars = append(dockerVars, m[1])
	}
	if len(makeVars) == 0 {
		t.Fatal("found no -X flag in the Makefile's LDFLAGS")
	}
	if diff := cmp.Diff(makeVars, dockerVars); diff != "" {
		t.Errorf("-X variables of the Dockerfile's build (-Makefile +Dockerfile):\n%s", diff)
	}
	if !strings.Contains(makefile, "\nGO_BUILD_BINARY := CGO_ENABLED=0 $(GO) build -trimpath -ldflags \"$(LDFLAGS)\"\n") {
		t.Error("the Makefile's GO_BUILD_BINARY is no longer the static, trimmed build with LDFLAGS this test compares")
	}
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	content, err := os.ReadFile("../../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(content)
}

// dockerInstructions returns the Dockerfile's instructions, continuation lines joined and
// comments dropped.
func dockerInstructions(dockerfile string) []string {
	var instructions []string
	var current strings.Builder
	for _, line := range strings.Split(dockerfile, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && current.Len() == 0) {
			continue
		}
		if joined, ok := strings.CutSuffix(trimmed, `\`); ok {
			current.WriteString(joined + " ")
			continue
		}
		current.WriteString(trimmed)
		instructions = append(instructions, strings.Join(strings.Fields(current.String()), " "))
		current.Reset()
	}
	return instructions
}

func lastIndex(instructions []string, prefix string) int {
	last := 0
	for i, instruction := range instructions {
		if strings.HasPrefix(instruction, prefix) {
			last = i
		}
	}
	return last
}
