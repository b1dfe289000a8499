#!/usr/bin/env python3
"""A stand-in browser for a non-interactive OAuth run (scripts/inspector-check.sh).

A client that wants the person's consent opens the authorization URL with ``$BROWSER``. This
script plays the person: it follows /authorize to the review page's consent request, reads
what the client asks for (the request is written to $CONSENT_LOG), grants it with the
person's own token (the file $PERSON_TOKEN_FILE) through the page's consent API — the same
call the Grant button makes — and opens the redirect back to the client.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def main(url: str) -> None:
    try:
        urllib.request.build_opener(_Stay()).open(url, timeout=10)
        raise SystemExit(f"{url} did not send the browser to the consent screen")
    except urllib.error.HTTPError as answer:
        page = answer.headers["Location"]
    consent = urllib.parse.parse_qs(urllib.parse.urlsplit(page).query)["consent"][0]
    server = urllib.parse.urlsplit(url)
    api = f"{server.scheme}://{server.netloc}/api/oauth/consent/{consent}"
    with open(os.environ["PERSON_TOKEN_FILE"], encoding="utf-8") as file:
        person = {"Authorization": "Bearer " + file.read().strip()}
    with urllib.request.urlopen(urllib.request.Request(api, headers=person), timeout=10) as r:
        asked = json.load(r)
    grant = urllib.request.Request(
        api,
        data=json.dumps({"grant": True}).encode(),
        method="POST",
        headers={**person, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(grant, timeout=10) as r:
        back = json.load(r)["redirect"]
    with open(os.environ.get("CONSENT_LOG", os.devnull), "a", encoding="utf-8") as log:
        print(f"granted: {json.dumps(asked)}", file=log)
    urllib.request.urlopen(back, timeout=10).read()


if __name__ == "__main__":
    main(sys.argv[1])
