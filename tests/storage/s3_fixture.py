#!/usr/bin/env python3
"""Sets up moto_server for tests/storage: an IAM user with a key allowed to use S3, a bucket,
and a dataset directory uploaded under a prefix with that key (so the upload is SigV4-checked
too). Prints "ACCESS_KEY SECRET_KEY". Runs with the venv run.sh installs moto[server] into."""
import argparse
import json
import os

import boto3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    boot = dict(endpoint_url=a.endpoint, region_name="us-east-1", aws_access_key_id="boot",
                aws_secret_access_key="boot")
    iam = boto3.client("iam", **boot)
    # These three are the INITIAL_NO_AUTH_ACTION_COUNT=3 requests moto lets through unsigned.
    iam.create_user(UserName="sluice")
    key = iam.create_access_key(UserName="sluice")["AccessKey"]
    iam.put_user_policy(UserName="sluice", PolicyName="s3", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1",
                      aws_access_key_id=key["AccessKeyId"],
                      aws_secret_access_key=key["SecretAccessKey"])
    s3.create_bucket(Bucket=a.bucket)
    for name in sorted(os.listdir(a.dir)):
        with open(os.path.join(a.dir, name), "rb") as f:
            s3.put_object(Bucket=a.bucket, Key=f"{a.prefix}/{name}", Body=f.read())
    print(key["AccessKeyId"], key["SecretAccessKey"], flush=True)


if __name__ == "__main__":
    main()
