#!/usr/bin/env bash
# Writes an auth file for `gangway server --auth` on stdout, with a new random token for each
# user and for agents to join (docs/deploy.md):
#
#   deploy/make-auth.sh alice bob ops:admin > /etc/gangway/auth.yaml
#
# A user is NAME (role user) or NAME:admin. Keep the file readable by the controller only:
# the tokens are the users' passwords.
set -euo pipefail
if (($# == 0)); then
  echo "usage: $0 USER[:admin]... > auth.yaml" >&2
  exit 2
fi
token() { openssl rand -hex 24; }
echo "# Made by deploy/make-auth.sh on $(date -u +%Y-%m-%d). Give each user their token;"
echo "# the join token goes to every node's agent (--join-token-file)."
echo "users:"
for spec in "$@"; do
  name=${spec%%:*}
  role=user
  [[ $spec == *:* ]] && role=${spec#*:}
  if [[ ! $name =~ ^[A-Za-z0-9._-]+$ ]]; then
    echo "$0: '$name' is not a user name (letters, digits, '.', '_', '-')" >&2
    exit 2
  fi
  if [[ $role != user && $role != admin ]]; then
    echo "$0: '$role' is not a role of $name; use NAME or NAME:admin" >&2
    exit 2
  fi
  echo "  - {name: $name, token: \"$(token)\", role: $role}"
done
echo "joinToken: \"$(token)\""
