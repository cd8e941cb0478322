#include "sdk/src/kube/kube_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::internal {
namespace {

using ::kdp::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

// ---- Environment -------------------------------------------------------------------------------

// Sets (or, with nullopt, unsets) an environment variable for the scope. Used only before any
// server thread starts, so no other thread reads the environment meanwhile.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name); old != nullptr) old_ = old;
    if (value.has_value()) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void WriteText(const std::string& path, const std::string& text) {
  ASSERT_TRUE(WriteFileDurably(path, text).ok()) << path;
}

std::string B64(const std::string& s) { return absl::Base64Escape(s); }

// ---- Kubeconfig --------------------------------------------------------------------------------

std::string KubeConfigYaml(const std::string& cluster_fields, const std::string& user_fields,
                           const std::string& current_context = "ctx") {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
clusters:
- name: other
  cluster:
    server: https://other.example:6443
- name: c1
  cluster:
)",
                      cluster_fields, R"(
users:
- name: u1
  user:
)",
                      user_fields, R"(
contexts:
- name: ctx
  context:
    cluster: c1
    user: u1
    namespace: default
current-context: )",
                      current_context, "\n");
}

TEST(LoadKubeConfigFile, DataFields) {
  TempDir temp;
  WriteText(
      temp.Path("config"),
      KubeConfigYaml(absl::StrCat("    server: https://10.0.0.1:6443\n"
                                  "    tls-server-name: kube.test\n"
                                  "    certificate-authority-data: ",
                                  B64("CA PEM")),
                     absl::StrCat("    token: abc\n    client-certificate-data: ", B64("CERT PEM"),
                                  "\n    client-key-data: ", B64("KEY PEM"))));
  absl::StatusOr<KubeConfig> config = LoadKubeConfigFile(temp.Path("config"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->tls_server_name, "kube.test");
  EXPECT_EQ(config->certificate_authority_pem, "CA PEM");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->bearer_token, "abc");
  EXPECT_EQ(config->bearer_token_file, "");
  EXPECT_EQ(config->client_certificate_pem, "CERT PEM");
  EXPECT_EQ(config->client_key_pem, "KEY PEM");
}

TEST(LoadKubeConfigFile, FileFieldsResolveAgainstTheKubeconfigDirectory) {
  TempDir temp;
  ASSERT_EQ(::mkdir(temp.Path("kube").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(temp.Path("kube/pki").c_str(), 0700), 0);
  WriteText(temp.Path("kube/pki/ca.crt"), "CA FILE");
  WriteText(temp.Path("kube/pki/client.crt"), "CERT FILE");
  WriteText(temp.Path("client.key"), "KEY FILE");
  WriteText(temp.Path("kube/token"), "file-token\n");
  WriteText(temp.Path("kube/config"),
            KubeConfigYaml("    server: https://api:6443\n"
                           "    certificate-authority: pki/ca.crt",
                           absl::StrCat("    token: ignored\n"
                                        "    tokenFile: token\n"
                                        "    client-certificate: pki/client.crt\n"
                                        "    client-key: ",
                                        temp.Path("client.key"))));
  absl::StatusOr<KubeConfig> config = LoadKubeConfigFile(temp.Path("kube/config"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->certificate_authority_pem, "CA FILE");
  EXPECT_EQ(config->client_certificate_pem, "CERT FILE");
  EXPECT_EQ(config->client_key_pem, "KEY FILE");
  EXPECT_EQ(config->bearer_token, "file-token");  // tokenFile wins, whitespace trimmed
  EXPECT_EQ(config->bearer_token_file, temp.Path("kube/token"));
}

TEST(LoadKubeConfigFile, JsonAndInsecure) {
  TempDir temp;
  WriteText(temp.Path("config.json"), R"({"apiVersion": "v1", "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://h", "insecure-skip-tls-verify": true}}],
    "contexts": [{"name": "x", "context": {"cluster": "c"}}], "current-context": "x"})");
  absl::StatusOr<KubeConfig> config = LoadKubeConfigFile(temp.Path("config.json"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->bearer_token, "");  // no user: anonymous
}

TEST(LoadKubeConfigFile, Errors) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  const std::string server = "    server: https://h:6443";
  const std::vector<Case> cases = {
      {KubeConfigYaml(server, "    token: t", ""), "no current-context is set"},
      {KubeConfigYaml(server, "    token: t", "nope"), "context \"nope\" (current-context)"},
      {KubeConfigYaml("    insecure-skip-tls-verify: true", "    token: t"), "has no server"},
      {KubeConfigYaml(server + "\n    certificate-authority-data: '!!notbase64'", "    token: t"),
       "certificate-authority-data is not valid base64"},
      {KubeConfigYaml(server, "    client-key-data: '%%%'"), "client-key-data is not valid base64"},
      {KubeConfigYaml(server, "    exec:\n      command: aws\n      apiVersion: x"),
       "user \"u1\": exec is not supported"},
      {KubeConfigYaml(server, "    auth-provider:\n      name: gcp"),
       "auth-provider is not supported"},
      {KubeConfigYaml(server, "    username: a\n    password: b"), "username is not supported"},
      {KubeConfigYaml(
           server + "\n    certificate-authority: /x\n    certificate-authority-data: " + B64("x"),
           "    token: t"),
       "certificate-authority-data and certificate-authority are both specified"},
      {KubeConfigYaml(server +
                          "\n    insecure-skip-tls-verify: true\n"
                          "    certificate-authority-data: " +
                          B64("x"),
                      "    token: t"),
       "insecure-skip-tls-verify is not allowed"},
      {KubeConfigYaml(server, "    client-certificate-data: " + B64("x")),
       "client-certificate and client-key must be given together"},
      {KubeConfigYaml(server + "\n    certificate-authority: missing.crt", "    token: t"),
       "unable to read certificate-authority"},
      {KubeConfigYaml(server, "    tokenFile: /nonexistent/token"), "unable to read tokenFile"},
      {KubeConfigYaml(server + "\n    proxy-url: http://proxy:3128", "    token: t"),
       "proxy-url is not supported"},
      {"clusters: [", ""},
      {"- a\n- b\n", "expected a mapping"},
  };
  for (const Case& c : cases) {
    TempDir temp;
    WriteText(temp.Path("config"), c.yaml);
    absl::StatusOr<KubeConfig> config = LoadKubeConfigFile(temp.Path("config"));
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(temp.Path("config"))) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(c.error)) << c.yaml;
  }
  // Files over the limit (a wrong path: a log, a device) are refused, naming the file.
  {
    TempDir big;
    WriteText(big.Path("token"), std::string(kMaxKubeConfigFileBytes + 1, 't'));
    WriteText(big.Path("config"),
              KubeConfigYaml(server, absl::StrCat("    tokenFile: ", big.Path("token"))));
    absl::Status status = LoadKubeConfigFile(big.Path("config")).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("unable to read tokenFile"));
    EXPECT_THAT(status.message(), HasSubstr(big.Path("token") + ": larger than the"));
    WriteText(big.Path("config"), KubeConfigYaml(server, "    tokenFile: /dev/zero"));
    EXPECT_THAT(LoadKubeConfigFile(big.Path("config")).status().message(),
                HasSubstr("/dev/zero: larger than the"));
    WriteText(big.Path("config"), std::string(kMaxKubeConfigFileBytes + 1, '#'));
    status = LoadKubeConfigFile(big.Path("config")).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("kubeconfig: " + big.Path("config") + ": larger"));
  }
  // A cluster name that does not exist.
  TempDir temp;
  WriteText(temp.Path("config"), R"(
clusters: []
contexts: [{name: x, context: {cluster: gone, user: u}}]
current-context: x)");
  EXPECT_THAT(LoadKubeConfigFile(temp.Path("config")).status().message(),
              HasSubstr("cluster \"gone\" of context \"x\" not found"));
  EXPECT_EQ(LoadKubeConfigFile(temp.Path("missing")).status().code(), absl::StatusCode::kNotFound);
}

// ---- In-cluster and resolution order -----------------------------------------------------------

TEST(LoadInClusterConfig, ReadsServiceAccount) {
  TempDir temp;
  WriteText(temp.Path("token"), "sa-token\n");
  WriteText(temp.Path("ca.crt"), "SA CA");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  absl::StatusOr<KubeConfig> config = LoadInClusterConfig(temp.path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->bearer_token, "sa-token");
  EXPECT_EQ(config->bearer_token_file, temp.Path("token"));
  EXPECT_EQ(config->certificate_authority_pem, "SA CA");

  ScopedEnv host6("KUBERNETES_SERVICE_HOST", "fd00::1");
  config = LoadInClusterConfig(temp.path());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
}

TEST(LoadInClusterConfig, NotInCluster) {
  TempDir temp;
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  absl::StatusOr<KubeConfig> config = LoadInClusterConfig(temp.path());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
  // In a cluster but without a token: an error naming the token.
  ScopedEnv host2("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  EXPECT_THAT(LoadInClusterConfig(temp.path()).status().message(), HasSubstr("token"));
}

TEST(ResolveKubeConfig, Order) {
  TempDir temp;
  WriteText(temp.Path("explicit"), KubeConfigYaml("    server: https://explicit", "    token: t"));
  WriteText(temp.Path("env"), KubeConfigYaml("    server: https://env", "    token: t"));
  WriteText(temp.Path("token"), "sa");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  {
    ScopedEnv kubeconfig("KUBECONFIG", temp.Path("missing") + ":" + temp.Path("env"));
    absl::StatusOr<KubeConfig> config = ResolveKubeConfig(temp.Path("explicit"), temp.path());
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->server, "https://explicit");
    config = ResolveKubeConfig("", temp.path());
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->server, "https://env");  // first existing file of the list
  }
  {
    ScopedEnv kubeconfig("KUBECONFIG", temp.Path("missing"));
    absl::StatusOr<KubeConfig> config = ResolveKubeConfig("", temp.path());
    EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(config.status().message(), HasSubstr(temp.Path("missing")));
  }
  ScopedEnv no_kubeconfig("KUBECONFIG", std::nullopt);
  absl::StatusOr<KubeConfig> config = ResolveKubeConfig("", temp.path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  ScopedEnv no_host("KUBERNETES_SERVICE_HOST", std::nullopt);
  config = ResolveKubeConfig("", temp.path());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("$KUBECONFIG is not set"), HasSubstr("in-cluster")));
  // An explicit path that does not exist is an error, not a fall-through.
  EXPECT_EQ(ResolveKubeConfig(temp.Path("nope"), temp.path()).status().code(),
            absl::StatusCode::kNotFound);
}

// ---- Certificates (OpenSSL C API, generated per test) -------------------------------------------

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

struct Identity {
  std::unique_ptr<X509, X509Free> cert;
  std::unique_ptr<EVP_PKEY, KeyFree> key;
  std::string cert_pem;
  std::string key_pem;
};

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

// A certificate for `cn` signed by `issuer` (self-signed when null). `kind`: "ca", "server"
// (SANs 127.0.0.1 and kube.test) or "client".
Identity MakeIdentity(const std::string& cn, const std::string& kind,
                      const Identity* issuer = nullptr) {
  static int serial = 1;
  Identity id;
  id.key.reset(EVP_EC_gen("P-256"));
  id.cert.reset(X509_new());
  X509* cert = id.cert.get();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, id.key.get());
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* issuer_cert = issuer != nullptr ? issuer->cert.get() : cert;
  X509_set_issuer_name(cert, X509_get_subject_name(issuer_cert));
  if (kind == "ca") {
    AddExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(cert, issuer_cert, NID_subject_key_identifier, "hash");
  } else {
    AddExtension(cert, issuer_cert, NID_basic_constraints, "CA:FALSE");
    AddExtension(cert, issuer_cert, NID_key_usage, "critical,digitalSignature");
    if (kind == "server") {
      AddExtension(cert, issuer_cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:kube.test");
      AddExtension(cert, issuer_cert, NID_ext_key_usage, "serverAuth");
    } else {
      AddExtension(cert, issuer_cert, NID_ext_key_usage, "clientAuth");
    }
  }
  EVP_PKEY* signer = issuer != nullptr ? issuer->key.get() : id.key.get();
  EXPECT_GT(X509_sign(cert, signer, EVP_sha256()), 0);
  id.cert_pem = ToPem(cert);
  id.key_pem = ToPem(id.key.get());
  return id;
}

// ---- Test API servers
// ----------------------------------------------------------------------------

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

// Routes of a fake API server. Handlers keep no state (they run on server threads).
void AddRoutes(httplib::Server& server, const std::string& prefix = "") {
  server.Get(prefix + "/api/v1/nodes/node-1",
             [](const httplib::Request& req, httplib::Response& res) {
               if (req.get_header_value("Authorization") != "Bearer secret-token") {
                 res.status = 401;
                 res.set_content(StatusBody(401, "Unauthorized", "Unauthorized: bad token"),
                                 "application/json");
                 return;
               }
               res.set_content(R"({"kind":"Node","metadata":{"name":"node-1","uid":"u1"}})",
                               "application/json");
             });
  server.Get(prefix + "/api/v1/nodes/missing", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(StatusBody(404, "NotFound", "nodes \"missing\" not found"), "application/json");
  });
  server.Post(prefix + "/apis/resource.k8s.io/v1/resourceslices",
              [](const httplib::Request& req, httplib::Response& res) {
                nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
                std::string name = body.is_object() ? body["metadata"].value("name", "") : "";
                if (name == "exists") {
                  res.status = 409;
                  res.set_content(StatusBody(409, "AlreadyExists",
                                             "resourceslices.resource.k8s.io \"exists\" already "
                                             "exists"),
                                  "application/json");
                  return;
                }
                res.status = 201;
                body["contentType"] = req.get_header_value("Content-Type");
                res.set_content(body.dump(), "application/json");
              });
  server.Put(prefix + "/apis/resource.k8s.io/v1/resourceslices/stale",
             [](const httplib::Request&, httplib::Response& res) {
               res.status = 409;
               res.set_content(StatusBody(409, "Conflict",
                                          "the object has been modified; please apply your "
                                          "changes to the latest version and try again"),
                               "application/json");
             });
  server.Delete(prefix + "/apis/resource.k8s.io/v1/resourceslices/s1",
                [](const httplib::Request&, httplib::Response& res) {
                  res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
                });
  server.Get(prefix + "/forbidden", [](const httplib::Request&, httplib::Response& res) {
    res.status = 403;
    res.set_content(StatusBody(403, "Forbidden", "nodes is forbidden: User cannot get"),
                    "application/json");
  });
  server.Get(prefix + "/plain-500", [](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content("upstream exploded", "text/plain");
  });
  server.Get(prefix + "/teapot",
             [](const httplib::Request&, httplib::Response& res) { res.status = 418; });
  server.Get(prefix + "/not-json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello", "text/plain");
  });
  server.Get(prefix + "/empty", [](const httplib::Request&, httplib::Response&) {});
  server.Get(prefix + "/whoami", [](const httplib::Request& req, httplib::Response& res) {
    std::string cn = "anonymous";
    if (req.ssl != nullptr) {
      if (X509* peer = SSL_get1_peer_certificate(req.ssl); peer != nullptr) {
        char buffer[256] = {};
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, buffer,
                                  sizeof(buffer));
        cn = buffer;
        X509_free(peer);
      }
    }
    res.set_content(nlohmann::json{{"user", cn}}.dump(), "application/json");
  });
}

// Runs `server` on 127.0.0.1 (an ephemeral port) until destroyed.
class RunningServer {
 public:
  explicit RunningServer(std::unique_ptr<httplib::Server> server) : server_(std::move(server)) {
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    EXPECT_TRUE(kdp::testing::WaitUntil([this] { return server_->is_running(); }));
  }
  ~RunningServer() {
    server_->stop();
    thread_.join();
  }
  RunningServer(const RunningServer&) = delete;
  RunningServer& operator=(const RunningServer&) = delete;

  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
};

std::unique_ptr<KubeClient> MustCreate(KubeConfig config) {
  absl::StatusOr<std::unique_ptr<KubeClient>> client = KubeClient::Create(std::move(config));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(KubeClient, PlainHttpRequestsAndErrorMapping) {
  auto server = std::make_unique<httplib::Server>();
  AddRoutes(*server);
  RunningServer running(std::move(server));
  const std::string url = absl::StrCat("http://127.0.0.1:", running.port());
  std::unique_ptr<KubeClient> client = MustCreate({.server = url, .bearer_token = "secret-token"});
  ASSERT_NE(client, nullptr);

  absl::StatusOr<nlohmann::json> node = client->Get("/api/v1/nodes/node-1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["uid"], "u1");

  absl::StatusOr<nlohmann::json> missing = client->Get("/api/v1/nodes/missing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              AllOf(HasSubstr("GET /api/v1/nodes/missing"), HasSubstr("HTTP 404"),
                    HasSubstr("nodes \"missing\" not found")));

  nlohmann::json slice = {{"metadata", {{"name", "s1"}}}, {"spec", {{"driver", "d"}}}};
  absl::StatusOr<nlohmann::json> created =
      client->Post("/apis/resource.k8s.io/v1/resourceslices", slice);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["spec"]["driver"], "d");
  EXPECT_EQ((*created)["contentType"], "application/json");

  absl::StatusOr<nlohmann::json> exists =
      client->Post("/apis/resource.k8s.io/v1/resourceslices", {{"metadata", {{"name", "exists"}}}});
  EXPECT_EQ(exists.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(exists.status().message(), HasSubstr("\"exists\" already exists"));

  absl::StatusOr<nlohmann::json> conflict =
      client->Put("/apis/resource.k8s.io/v1/resourceslices/stale", slice);
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(conflict.status().message(), HasSubstr("the object has been modified"));

  absl::StatusOr<nlohmann::json> deleted =
      client->Delete("/apis/resource.k8s.io/v1/resourceslices/s1");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ((*deleted)["status"], "Success");

  EXPECT_EQ(client->Get("/forbidden").status().code(), absl::StatusCode::kPermissionDenied);
  absl::Status plain = client->Get("/plain-500").status();
  EXPECT_EQ(plain.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(plain.message(), HasSubstr("upstream exploded"));
  EXPECT_EQ(client->Get("/teapot").status().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(client->Get("/not-json").status().code(), absl::StatusCode::kUnknown);
  absl::StatusOr<nlohmann::json> empty = client->Get("/empty");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, nlohmann::json::object());
  // A route the server does not have: httplib's plain 404.
  EXPECT_EQ(client->Get("/nothing").status().code(), absl::StatusCode::kNotFound);
}

TEST(KubeClient, BadTokenIsUnauthenticatedWithTheStatusMessage) {
  auto server = std::make_unique<httplib::Server>();
  AddRoutes(*server);
  RunningServer running(std::move(server));
  const std::string url = absl::StrCat("http://127.0.0.1:", running.port());
  for (const char* token : {"wrong", ""}) {
    std::unique_ptr<KubeClient> client = MustCreate({.server = url, .bearer_token = token});
    ASSERT_NE(client, nullptr);
    absl::Status status = client->Get("/api/v1/nodes/node-1").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << token;
    EXPECT_THAT(status.message(), HasSubstr("Unauthorized: bad token")) << token;
  }
}

TEST(KubeClient, TokenFileIsRead) {
  TempDir temp;
  WriteText(temp.Path("token"), "secret-token\n");
  auto server = std::make_unique<httplib::Server>();
  AddRoutes(*server);
  RunningServer running(std::move(server));
  std::unique_ptr<KubeClient> client =
      MustCreate({.server = absl::StrCat("http://127.0.0.1:", running.port()),
                  .bearer_token = "stale",
                  .bearer_token_file = temp.Path("token")});
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Get("/api/v1/nodes/node-1").ok());
}

TEST(KubeClient, ServerPathPrefix) {
  auto server = std::make_unique<httplib::Server>();
  AddRoutes(*server, "/k8s/clusters/c-1");
  RunningServer running(std::move(server));
  std::unique_ptr<KubeClient> client =
      MustCreate({.server = absl::StrCat("http://127.0.0.1:", running.port(), "/k8s/clusters/c-1/"),
                  .bearer_token = "secret-token"});
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Get("/api/v1/nodes/node-1").ok());
}

TEST(KubeClient, TransportFailureIsUnavailable) {
  // A port nothing listens on: bound (so no one else takes it meanwhile) but not listening, so
  // a connection is refused at once.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  std::unique_ptr<KubeClient> client =
      MustCreate({.server = absl::StrCat("http://127.0.0.1:", ntohs(address.sin_port)),
                  .timeout = absl::Seconds(20)});
  ASSERT_NE(client, nullptr);
  absl::Status status = client->Get("/api/v1/nodes/node-1").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("GET /api/v1/nodes/node-1"));
  ::close(fd);
}

TEST(KubeClient, CreateRejectsBadInput) {
  for (const char* url : {"ftp://h", "https://", "https://h:99999", "https://h:x", "http://[::1"}) {
    absl::StatusOr<std::unique_ptr<KubeClient>> client = KubeClient::Create({.server = url});
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << url;
  }
  EXPECT_THAT(KubeClient::Create({.server = "https://h", .certificate_authority_pem = "junk"})
                  .status()
                  .message(),
              HasSubstr("certificate authority: no valid PEM certificate"));
  Identity a = MakeIdentity("a", "client");
  Identity b = MakeIdentity("b", "client");
  EXPECT_THAT(KubeClient::Create({.server = "https://h",
                                  .client_certificate_pem = a.cert_pem,
                                  .client_key_pem = b.key_pem})
                  .status()
                  .message(),
              HasSubstr("does not match"));
  EXPECT_EQ(KubeClient::Create({.server = "https://h", .client_certificate_pem = a.cert_pem})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A TLS API server with a certificate from `ca`, requiring client certificates from
// `client_ca` when given.
std::unique_ptr<RunningServer> StartTlsServer(const Identity& server_id,
                                              const Identity* client_ca = nullptr) {
  X509_STORE* store = nullptr;
  if (client_ca != nullptr) {
    store = X509_STORE_new();
    X509_STORE_add_cert(store, client_ca->cert.get());  // the server's SSL_CTX takes the store
  }
  auto server =
      std::make_unique<httplib::SSLServer>(server_id.cert.get(), server_id.key.get(), store);
  EXPECT_TRUE(server->is_valid());
  AddRoutes(*server);
  return std::make_unique<RunningServer>(std::move(server));
}

TEST(KubeClient, TlsVerifiesTheServerAgainstTheConfiguredCa) {
  Identity ca = MakeIdentity("test-ca", "ca");
  Identity other_ca = MakeIdentity("other-ca", "ca");
  Identity server_id = MakeIdentity("kube-apiserver", "server", &ca);
  std::unique_ptr<RunningServer> running = StartTlsServer(server_id);
  const std::string url = absl::StrCat("https://127.0.0.1:", running->port());

  std::unique_ptr<KubeClient> good = MustCreate(
      {.server = url, .certificate_authority_pem = ca.cert_pem, .bearer_token = "secret-token"});
  ASSERT_NE(good, nullptr);
  absl::StatusOr<nlohmann::json> node = good->Get("/api/v1/nodes/node-1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["name"], "node-1");
  EXPECT_EQ(good->Get("/api/v1/nodes/missing").status().code(), absl::StatusCode::kNotFound);

  // A CA bundle with the right CA second also works.
  std::unique_ptr<KubeClient> bundle =
      MustCreate({.server = url,
                  .certificate_authority_pem = other_ca.cert_pem + ca.cert_pem,
                  .bearer_token = "secret-token"});
  ASSERT_NE(bundle, nullptr);
  EXPECT_TRUE(bundle->Get("/api/v1/nodes/node-1").ok());

  std::unique_ptr<KubeClient> wrong = MustCreate(
      {.server = url, .certificate_authority_pem = other_ca.cert_pem, .bearer_token = "x"});
  ASSERT_NE(wrong, nullptr);
  absl::Status status = wrong->Get("/api/v1/nodes/node-1").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("certificate verify failed"));

  // No CA configured: the system trust store does not know the test CA.
  std::unique_ptr<KubeClient> system = MustCreate({.server = url});
  ASSERT_NE(system, nullptr);
  EXPECT_EQ(system->Get("/whoami").status().code(), absl::StatusCode::kUnavailable);

  // insecure-skip-tls-verify connects anyway.
  std::unique_ptr<KubeClient> insecure =
      MustCreate({.server = url, .insecure_skip_tls_verify = true});
  ASSERT_NE(insecure, nullptr);
  EXPECT_TRUE(insecure->Get("/whoami").ok());
}

TEST(KubeClient, TlsServerNameOverridesTheVerifiedName) {
  Identity ca = MakeIdentity("test-ca", "ca");
  Identity server_id = MakeIdentity("kube-apiserver", "server", &ca);
  std::unique_ptr<RunningServer> running = StartTlsServer(server_id);
  // "localhost" is not in the certificate (127.0.0.1 and kube.test are).
  const std::string url = absl::StrCat("https://localhost:", running->port());
  std::unique_ptr<KubeClient> by_host =
      MustCreate({.server = url, .certificate_authority_pem = ca.cert_pem});
  ASSERT_NE(by_host, nullptr);
  EXPECT_EQ(by_host->Get("/whoami").status().code(), absl::StatusCode::kUnavailable);
  std::unique_ptr<KubeClient> by_name = MustCreate(
      {.server = url, .certificate_authority_pem = ca.cert_pem, .tls_server_name = "kube.test"});
  ASSERT_NE(by_name, nullptr);
  absl::StatusOr<nlohmann::json> who = by_name->Get("/whoami");
  EXPECT_TRUE(who.ok()) << who.status();
  std::unique_ptr<KubeClient> wrong_name = MustCreate(
      {.server = url, .certificate_authority_pem = ca.cert_pem, .tls_server_name = "other.test"});
  ASSERT_NE(wrong_name, nullptr);
  EXPECT_EQ(wrong_name->Get("/whoami").status().code(), absl::StatusCode::kUnavailable);
}

TEST(KubeClient, ClientCertificateAuthentication) {
  Identity ca = MakeIdentity("test-ca", "ca");
  Identity client_ca = MakeIdentity("client-ca", "ca");
  Identity server_id = MakeIdentity("kube-apiserver", "server", &ca);
  Identity driver = MakeIdentity("system:node:node-1", "client", &client_ca);
  Identity stranger = MakeIdentity("stranger", "client", &ca);  // not from the client CA
  std::unique_ptr<RunningServer> running = StartTlsServer(server_id, &client_ca);
  const std::string url = absl::StrCat("https://127.0.0.1:", running->port());

  std::unique_ptr<KubeClient> client = MustCreate({.server = url,
                                                   .certificate_authority_pem = ca.cert_pem,
                                                   .client_certificate_pem = driver.cert_pem,
                                                   .client_key_pem = driver.key_pem});
  ASSERT_NE(client, nullptr);
  absl::StatusOr<nlohmann::json> who = client->Get("/whoami");
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ((*who)["user"], "system:node:node-1");

  std::unique_ptr<KubeClient> no_cert =
      MustCreate({.server = url, .certificate_authority_pem = ca.cert_pem});
  ASSERT_NE(no_cert, nullptr);
  EXPECT_EQ(no_cert->Get("/whoami").status().code(), absl::StatusCode::kUnavailable);

  std::unique_ptr<KubeClient> bad_cert = MustCreate({.server = url,
                                                     .certificate_authority_pem = ca.cert_pem,
                                                     .client_certificate_pem = stranger.cert_pem,
                                                     .client_key_pem = stranger.key_pem});
  ASSERT_NE(bad_cert, nullptr);
  EXPECT_EQ(bad_cert->Get("/whoami").status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kdp::internal
