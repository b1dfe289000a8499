-- Recall reads the ranking fields of ~1,000 candidates per query. Casting each full
-- document to jsonb and reading fifteen paths cost most of a recall at 100k memories; one
-- short JSON array per row (`storage.rows.memory_docs`, written with the document) is read
-- as it is. Rows of an older database are filled here from their documents.
ALTER TABLE memories ADD COLUMN recall text;
UPDATE memories SET recall = (SELECT jsonb_build_array(id, seq, updated_at, d #> '{title}', d #> '{content}', d #> '{created_at}', d #> '{recorded_at}', d #> '{session}', d #> '{extra,x_speaker}', d #> '{importance}', d #> '{confidence}', d #> '{lifecycle}', d #> '{valid_from}', d #> '{valid_until}', d #> '{expires}', d #> '{ttl,policy}', d #> '{ttl,expires_at}', d #> '{ttl,decay_days}', d #> '{actor}', d #> '{channel}')::text FROM (SELECT doc::jsonb AS d) AS parsed);
ALTER TABLE memories ALTER COLUMN recall SET NOT NULL;
