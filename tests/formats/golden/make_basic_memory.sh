#!/bin/sh
# Make the basic-memory golden project with basic-memory's own CLI (not run by the test suite).
#
# basic-memory is not a troth dependency and needs Python 3.12, so this runs in a scratch
# virtual environment, offline, with HOME (basic-memory's config and index) in a temp dir:
#
#   /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/bmvenv   # any Python 3.12
#   /tmp/bmvenv/bin/pip install basic-memory==0.24.1
#   sh tests/formats/golden/make_basic_memory.sh /tmp/bmvenv/bin/basic-memory
#
# It creates a project "demo", writes the notes below with `basic-memory tool write-note`
# (so basic-memory chooses the file names, the folders and the frontmatter it writes), and
# copies the project folder to tests/formats/golden/basic-memory/demo. Every note is written
# exactly as basic-memory wrote it; nothing is edited afterwards.
set -eu
BM=${1:-basic-memory}
HERE=$(cd "$(dirname "$0")" && pwd)
SCRATCH=$(mktemp -d /tmp/bm-golden-XXXXXX)
export HOME="$SCRATCH/home"
mkdir -p "$HOME" "$SCRATCH/demo"
export BASIC_MEMORY_NO_PROMOS=1
"$BM" project add demo "$SCRATCH/demo" --default --local

note() { # title folder [extra write-note options...]; the content comes on stdin
  title=$1; folder=$2; shift 2
  "$BM" tool write-note --title "$title" --folder "$folder" --project demo --local "$@" >/dev/null
}

note "Coffee Brewing Methods" food --tags coffee --tags brewing <<'NOTE'
# Coffee Brewing Methods

## Observations
- [method] Pour over provides more flavor clarity than French press #brewing
- [technique] Water temperature at 205°F extracts optimal compounds #brewing #heat
- [preference] Ethiopian beans work well with lighter roasts (personal experience)
- Grind size matters more than the kettle #grind
- [ ] buy paper filters
- [x] descale the kettle

## Relations
- relates_to [[Coffee Bean Origins]]
- requires [[Proper Grinding Technique]]
- contrasts_with [[Tea Brewing Methods]] (a different ritual)

Most mornings I follow the notes in [[Brewing Journal]] and compare them with [[Ethiopia]].
NOTE

note "Coffee Bean Origins" food/origins --type guide <<'NOTE'
# Coffee Bean Origins

- [region] Ethiopian beans taste of blueberry and jasmine #origin
- [region] Colombian beans are balanced and sweet #origin (washed process)
- "pairs well with" [[Coffee Brewing Methods]]
- [[Ethiopia]]

Beans from [[Ethiopia]] were the first I roasted myself.
NOTE

note "Ethiopia" places/africa <<'NOTE'
# Ethiopia

- [fact] Coffee is said to have been discovered in the Kaffa region #history
- grows [[Coffee Bean Origins]] (the main origin in this project)
NOTE

# The less common forms, each read here as basic-memory's parser reads it (index.json).
note "Link Forms" notes <<'NOTE'
# Link Forms

- 'made with' [[Coffee Brewing Methods]]
- part_of [[demo::Coffee Bean Origins]]
- see [[Ethiopia]] and also [[Brewing Journal]] for more
- [[Coffee Brewing Methods|the brewing note]]
- [x] a done task that mentions [[Ethiopia]]
- [12:30] a clock time is not a category #time
- named on purpose [[Ethiopia]] #bm:links_to

[idea] A paragraph that looks like an observation #idea

> [quote] an observation inside a quote is not one #quoted

```
- [code] nothing in a code block counts [[Nowhere]]
```
NOTE

# A note longer than troth's 2,000-character memory limit: its text is 3,067 characters.
python3 - <<'PY' | note "Brewing Journal" journal/2026
head = ["# Brewing Journal", ""]
logs = [
    f"- [log] Day {d}: 18 g of coffee to 300 g of water, bloom for 40 s, total 3 min #v60"
    for d in range(1, 34)
]
tail = ["", "- follows [[Coffee Brewing Methods]]"]
text = "\n".join(head + logs + ["", ""] + tail)
words = "The kettle sings while the bloom settles and the kitchen smells of fruit. "
prose = (words * 20)[: 3066 - len(text)].rstrip() + "."
print("\n".join(head + logs + ["", prose] + tail))
PY

rm -rf "$HERE/basic-memory/demo"
mkdir -p "$HERE/basic-memory"
cp -R "$SCRATCH/demo" "$HERE/basic-memory/demo"
find "$HERE/basic-memory/demo" -name '.*' -prune -exec rm -rf {} +

# What basic-memory itself read from the notes (its index: entities, observations, relations
# with the targets it resolved), for the tests to compare troth's reading with.
"$(dirname "$BM")/python" - "$HOME/.basic-memory/memory.db" "$HERE/basic-memory/index.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
entities = db.execute(
    "select title, note_type, permalink, file_path from entity order by file_path"
).fetchall()
observations = db.execute(
    "select e.file_path, o.category, o.content, o.tags, o.context from observation o"
    " join entity e on e.id = o.entity_id order by e.file_path, o.id"
).fetchall()
relations = db.execute(
    "select e.file_path, r.relation_type, r.to_name, t.permalink, r.context from relation r"
    " join entity e on e.id = r.from_id left join entity t on t.id = r.to_id"
    " order by e.file_path, r.id"
).fetchall()
out = {
    "entities": [dict(zip(("title", "type", "permalink", "file_path"), e)) for e in entities],
    "observations": [
        {"file_path": f, "category": c, "content": t, "tags": json.loads(g) if g else None,
         "context": x}
        for f, c, t, g, x in observations
    ],
    "relations": [
        dict(zip(("file_path", "type", "to_name", "to_permalink", "context"), r))
        for r in relations
    ],
}
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, indent=2)
    f.write("\n")
PY
rm -rf "$SCRATCH"
echo "wrote $HERE/basic-memory/demo and $HERE/basic-memory/index.json"
