// Which attempts are retried and how long the client waits (storage/retry.h).
#include "storage/retry.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

namespace sluice::storage {
namespace {

AttemptResult Range206(uint64_t want, uint64_t got) {
  AttemptResult a;
  a.range_request = true;
  a.http_status = 206;
  a.want_bytes = want;
  a.got_bytes = got;
  return a;
}

TEST(RetryTest, ExactRangeIsUsed) {
  std::string why;
  EXPECT_EQ(Classify(Range206(100, 100), 1000, &why), Verdict::kOk);
}

TEST(RetryTest, TruncatedOrWrongBodiesAreRetried) {
  std::string why;
  EXPECT_EQ(Classify(Range206(100, 50), 1000, &why), Verdict::kRetry);
  EXPECT_NE(why.find("50 of 100"), std::string::npos) << why;
  AttemptResult wrong_range = Range206(100, 100);
  wrong_range.content_range_ok = false;
  EXPECT_EQ(Classify(wrong_range, 1000, &why), Verdict::kRetry);
  AttemptResult whole = Range206(100, 0);
  whole.http_status = 200;
  whole.range_ignored = true;
  whole.curl_code = CURLE_WRITE_ERROR;
  EXPECT_EQ(Classify(whole, 1000, &why), Verdict::kRetry);
  EXPECT_NE(why.find("200"), std::string::npos) << why;
}

TEST(RetryTest, ServerErrorsThrottlingAndTimeoutsAreRetried) {
  std::string why;
  for (long s : {408L, 429L, 500L, 502L, 503L, 504L}) {
    AttemptResult a = Range206(10, 0);
    a.http_status = s;
    EXPECT_EQ(Classify(a, 1000, &why), Verdict::kRetry) << s;
    EXPECT_NE(why.find(std::to_string(s)), std::string::npos);
  }
  AttemptResult t;
  t.timed_out = true;
  EXPECT_EQ(Classify(t, 750, &why), Verdict::kRetry);
  EXPECT_NE(why.find("750 ms"), std::string::npos) << why;
}

TEST(RetryTest, DroppedConnectionsAreRetried) {
  std::string why;
  for (int code : {CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_COULDNT_CONNECT,
                   CURLE_SEND_ERROR}) {
    AttemptResult a;
    a.curl_code = code;
    a.curl_error = "x";
    EXPECT_EQ(Classify(a, 1000, &why), Verdict::kRetry) << code;
  }
}

TEST(RetryTest, TooSlowIsRetriedNamingTheRateAndTheFlag) {
  std::string why;
  AttemptResult a = Range206(4096, 17);
  a.curl_code = CURLE_OPERATION_TIMEDOUT;
  a.curl_error = "Operation too slow. Less than 1024 bytes/sec transferred the last 2 seconds";
  a.too_slow = true;
  a.min_rate = 1024;
  a.min_rate_s = 2;
  EXPECT_EQ(Classify(a, 1500, &why), Verdict::kRetry);
  EXPECT_NE(why.find("under 1024 bytes/s for 2 s (17 of 4096 bytes received"), std::string::npos)
      << why;
  EXPECT_NE(why.find("--min-rate"), std::string::npos) << why;
  EXPECT_EQ(MinRateSeconds(1500), 2u);
  EXPECT_EQ(MinRateSeconds(1), 1u);
}

// curl's words for an answer that is not HTTP: what a response cut short or garbled looks like.
TEST(RetryTest, ResponseWithoutAStatusLineIsRetriedAsMalformed) {
  std::string why;
  AttemptResult a;
  a.curl_code = CURLE_UNSUPPORTED_PROTOCOL;
  a.curl_error = "Received HTTP/0.9 when not allowed";
  EXPECT_EQ(Classify(a, 1000, &why), Verdict::kRetry);
  EXPECT_NE(why.find("malformed response"), std::string::npos) << why;
  a.curl_error = "Protocol \"gopher\" not supported";  // a URL no retry can help
  EXPECT_EQ(Classify(a, 1000, &why), Verdict::kFail);
}

TEST(RetryTest, ClientErrorsAreFinal) {
  std::string why;
  for (long s : {400L, 401L, 403L, 416L}) {
    AttemptResult a = Range206(10, 0);
    a.http_status = s;
    EXPECT_EQ(Classify(a, 1000, &why), Verdict::kFail) << s;
  }
  AttemptResult nf = Range206(10, 0);
  nf.http_status = 404;
  EXPECT_EQ(Classify(nf, 1000, &why), Verdict::kNotFound);
  AttemptResult tls;
  tls.curl_code = CURLE_PEER_FAILED_VERIFICATION;
  EXPECT_EQ(Classify(tls, 1000, &why), Verdict::kFail);
}

TEST(RetryTest, BackoffGrowsIsCappedAndJittered) {
  EXPECT_EQ(BackoffMs(1, 100, 5000, 0), 50u);     // half fixed, jitter 0
  EXPECT_EQ(BackoffMs(1, 100, 5000, 50), 100u);   // the top of the first window
  EXPECT_EQ(BackoffMs(3, 100, 5000, 0), 200u);    // 400 ms window
  EXPECT_EQ(BackoffMs(30, 100, 5000, 0), 2500u);  // capped at 5 s
  for (uint64_t r = 0; r < 1000; r += 37) {
    const uint32_t b = BackoffMs(2, 100, 5000, r);
    EXPECT_GE(b, 100u);
    EXPECT_LE(b, 200u);
  }
}

}  // namespace
}  // namespace sluice::storage
