-- The erasure epoch: how many transactions that erased a text or forgot a memory have
-- committed. Each such transaction moves it (`Transaction.note_erasure`), so a process
-- that keeps memories' words outside the database (recall's word cache) sees another
-- process's erasure at its next read and empties (docs/retrieval.md, "Late interaction").
INSERT INTO store_meta (key, value) VALUES ('erasure_epoch', '0') ON CONFLICT (key) DO NOTHING;
