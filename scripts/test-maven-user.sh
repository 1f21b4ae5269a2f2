#!/usr/bin/env bash
# Installs kstate-streams into ~/.m2 (gradle -p java publishToMavenLocal) and builds a separate
# Maven project against it, as an application would: tests/maven-user, whose
# TopologyTestDriver test counts words in a kstate store (dev.kstate:kstate-streams from
# mavenLocal, kafka-streams as the application's own dependency).
# Maven runs offline (-o) when ~/.m2 has everything; the first run on a machine resolves the
# plugins and Kafka from Maven Central once. The project is copied to target/maven-user so
# Maven's output stays out of the source tree.
# Usage: bash scripts/test-maven-user.sh   (KSTATE_SKIP_PUBLISH=1: use what ~/.m2 has)
# Last line: "maven user project: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
if [[ ${KSTATE_SKIP_PUBLISH:-0} != 1 ]]; then
    gradle -p java publishToMavenLocal --console=plain -q
fi
m2=${HOME}/.m2/repository/dev/kstate/kstate-streams/$version
for f in "kstate-streams-$version.jar" "kstate-streams-$version.pom" \
    "kstate-streams-$version-sources.jar" "kstate-streams-$version-javadoc.jar"; do
    [[ -f $m2/$f ]] || { echo "missing $m2/$f after publishToMavenLocal"; exit 1; }
done

work=target/maven-user
rm -rf "$work"
mkdir -p "$work"
cp -r tests/maven-user/. "$work/"
log=$work/mvn.log
args=(-B -q -Dkstate.version="$version" -f "$work/pom.xml" test)
if ! mvn -o "${args[@]}" >"$log" 2>&1; then
    if grep -qiE 'offline|has not been downloaded|Could not resolve|Cannot access' "$log"; then
        echo "maven user project: resolving plugins and dependencies from Maven Central (first run)"
        mvn "${args[@]}" >"$log" 2>&1 || true
    fi
fi
report=$work/target/surefire-reports/TEST-example.WordCountTest.xml
if [[ ! -f $report ]]; then
    sed 's/^/    /' "$log" | tail -40
    echo "maven user project: 0 passed, 1 failed"
    exit 1
fi
tests=$(grep -o 'tests="[0-9]*"' "$report" | head -1 | tr -dc 0-9)
bad=$(($(grep -o 'failures="[0-9]*"' "$report" | head -1 | tr -dc 0-9) + $(grep -o 'errors="[0-9]*"' "$report" | head -1 | tr -dc 0-9)))
if [[ $bad -ne 0 || $tests -eq 0 ]]; then
    sed 's/^/    /' "$log" | tail -40
fi
echo "maven user project: $((tests - bad)) passed, $bad failed"
[[ $bad -eq 0 && $tests -gt 0 ]]
