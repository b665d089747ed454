#!/usr/bin/env bash
# Prints, as a Markdown table, the license of every module whose packages
# the workspace's packages or their tests import (docs/licenses.md is its
# output). A license is recognised by the text of the module's LICENSE
# file in the module cache; "unrecognised" needs a look by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
patterns=(./...)
for d in $(go work edit -json | sed -n 's/.*"DiskPath": "\.\/\(..*\)".*/\1/p'); do patterns+=("./$d/..."); done
lib=$(GOWORK=off go list -deps -test -f '{{with .Module}}{{.Path}}{{end}}' ./... | sort -u)
echo "| module | version | license | needed by |"
echo "|---|---|---|---|"
go list -deps -test -f '{{with .Module}}{{.Path}} {{.Version}} {{.Dir}}{{end}}' "${patterns[@]}" | sort -u |
while read -r path version dir; do
  case $path in github.com/tenure-dev/tenure*) continue ;; esac
  f=$(ls "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* 2>/dev/null | head -1 || true)
  text=$( [ -n "$f" ] && head -c 4000 "$f" || true)
  case $text in
    *"Apache License"*) l=Apache-2.0 ;;
    *"Mozilla Public License"*) l=MPL-2.0 ;;
    *"Redistribution and use in source and binary forms"*)
      if grep -q "Neither the name\|names of its contributors\|name of the copyright holder" <<<"$text"; then l=BSD-3-Clause; else l=BSD-2-Clause; fi ;;
    *"Permission is hereby granted, free of charge"*) l=MIT ;;
    *"Permission to use, copy, modify, and/or distribute"*|*"ISC License"*) l=ISC ;;
    *) l=unrecognised ;;
  esac
  if grep -qx "$path" <<<"$lib"; then by=library; else by="kube, embedded or the tool"; fi
  echo "| $path | $version | $l | $by |"
done
