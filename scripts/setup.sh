#!/usr/bin/env bash
# Installs what kstate's build and tests need on a fresh Debian machine that has only the
# toolchains (Rust, a JDK, a C compiler). Idempotent and quiet when everything is there.
# Sourced by scripts/test.sh and scripts/demo.sh.
set -euo pipefail

kstate_need_pkgs=()
# python3-venv: the moto S3 server of the object-store checkpoint tests (scripts/install-moto.sh).
for pkg in clang libclang-dev valgrind gradle pkg-config python3-venv; do
  dpkg -s "$pkg" >/dev/null 2>&1 || kstate_need_pkgs+=("$pkg")
done
# Maven builds the separate user project of the distribution test (scripts/test-maven-user.sh).
command -v mvn >/dev/null 2>&1 || kstate_need_pkgs+=(maven)
if [ "${#kstate_need_pkgs[@]}" -gt 0 ]; then
  echo "setup: installing ${kstate_need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${kstate_need_pkgs[@]}" >/dev/null
fi

# Debian's Gradle 4.4.1 runs on OpenJDK 17, not on newer JDKs that may be installed beside it.
for jdk in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk*; do
  if [ -x "$jdk/bin/java" ]; then
    export JAVA_HOME="$jdk"
    export PATH="$JAVA_HOME/bin:$PATH"
    break
  fi
done
