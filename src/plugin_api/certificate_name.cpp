#include "plugin_api/certificate_name.hpp"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>

namespace fracpack::api {

std::string certificate_name(X509* cert) {
  if (cert == nullptr) return "";
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at < 0 || X509_NAME_get_index_by_NID(subject, NID_commonName, at) >= 0) return "";  // none, or two
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
  std::string name = n > 0 ? std::string(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n)) : "";
  OPENSSL_free(utf8);
  return name;
}

std::string certificate_name_of_pem(std::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return "";
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  std::string name = certificate_name(cert);
  X509_free(cert);
  return name;
}

}  // namespace fracpack::api
