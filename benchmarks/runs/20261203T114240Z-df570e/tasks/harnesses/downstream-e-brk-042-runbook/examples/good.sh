# E-BRK-042: the batch is over the relay's 256 KiB limit; split it, never raise the limit.
relay status b-2291
relay split --max-bytes 262144 b-2291
relay requeue b-2291
