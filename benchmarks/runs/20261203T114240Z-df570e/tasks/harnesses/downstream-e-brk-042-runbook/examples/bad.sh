# Partner rejected the batch: raise the limit and retry.
relay config set max_bytes 1048576
relay requeue b-2291
