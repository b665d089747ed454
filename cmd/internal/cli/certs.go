package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"
)

// certsLong is the help of tenure certs.
const certsLong = `certs makes the certificates a tenure server cluster and its clients need
for TLS with client certificates: a certificate authority (CA), one
certificate per member (for its clients and its peers alike) and client
certificates for tenure run, status and watch. Keys are ECDSA P-256, written
with mode 0600; certificates with 0644. An existing file is never
overwritten: remove it first to make it again.

  tenure certs ca --dir certs
  tenure certs member --name m1 --host 10.0.0.1 --dir certs
  tenure certs client --name worker --dir certs

write, in --dir:

  ca.pem, ca-key.pem            the CA: keep ca-key.pem off the hosts
  m1.pem, m1-key.pem            member m1, valid for its --host names
  worker.pem, worker-key.pem    a client

A member serves with --server-tls-cert m1.pem --server-tls-key m1-key.pem
--server-tls-ca ca.pem and the same three as --peer-tls-*; a client
connects with --tls-ca ca.pem --tls-cert worker.pem --tls-key
worker-key.pem. docs/deploy.md walks through three hosts.`

// certsFlags are the flags of the tenure certs subcommands.
type certsFlags struct {
	dir      string
	name     string
	hosts    []string
	validFor time.Duration
}

// certName is what a certificate's --name may be: it names its files.
var certName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func newCertsCommand() *cobra.Command {
	certs := &cobra.Command{
		Use:   "certs",
		Short: "Make a CA and the TLS certificates of a tenure server cluster and its clients",
		Long:  certsLong,
		Args:  noArgs,
	}
	ca := certsSubcommand("ca", "Make the certificate authority: ca.pem and ca-key.pem in --dir",
		10*365*24*time.Hour, makeCA)
	member := certsSubcommand("member", "Make a member's certificate (server and peer), signed by the CA in --dir",
		5*365*24*time.Hour, makeMember)
	client := certsSubcommand("client", "Make a client certificate, signed by the CA in --dir",
		5*365*24*time.Hour, makeClient)
	for _, c := range []*cobra.Command{member, client} {
		c.Flags().String("name", "", "name of the certificate (its common name) and of its files: NAME.pem, NAME-key.pem")
	}
	member.Flags().StringSlice("host", nil, "an IP address or DNS name the member is reached at (repeat, or comma-separate)")
	certs.AddCommand(ca, member, client)
	return certs
}

// certsSubcommand is one subcommand of tenure certs, making its files with
// do.
func certsSubcommand(use, short string, validFor time.Duration, do func(cmd *cobra.Command, f certsFlags) error) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var f certsFlags
			fl := cmd.Flags()
			f.dir, _ = fl.GetString("dir")
			f.validFor, _ = fl.GetDuration("valid-for")
			if fl.Lookup("name") != nil {
				f.name, _ = fl.GetString("name")
				if f.name == "" {
					return usageError("%s is required", flagRef(cmd, "name"))
				}
				if !certName.MatchString(f.name) || f.name == "ca" {
					return usageError("%s %q: want letters, digits, '.', '_' or '-' (not \"ca\", the CA's files)", flagRef(cmd, "name"), f.name)
				}
			}
			if fl.Lookup("host") != nil {
				f.hosts, _ = fl.GetStringSlice("host")
			}
			if f.validFor <= 0 {
				return usageError("%s %s: want a positive duration", flagRef(cmd, "valid-for"), f.validFor)
			}
			return do(cmd, f)
		},
	}
	c.Flags().String("dir", "certs", "directory of the CA and of the files made (created if missing)")
	c.Flags().Duration("valid-for", validFor, "how long the certificate is valid from now")
	return c
}

// makeCA writes a new CA into f.dir.
func makeCA(cmd *cobra.Command, f certsFlags) error {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "tenure CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	return issue(cmd, f, "ca", tmpl, nil, nil)
}

// makeMember writes a member's certificate, for TLS servers and clients
// (members are each other's peers), valid for f.hosts.
func makeMember(cmd *cobra.Command, f certsFlags) error {
	tmpl := leafTemplate(f.name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	for _, h := range f.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if len(tmpl.IPAddresses)+len(tmpl.DNSNames) == 0 {
		return usageError("%s: want an IP address or DNS name", flagRef(cmd, "host"))
	}
	ca, key, err := loadCA(f.dir)
	if err != nil {
		return err
	}
	return issue(cmd, f, f.name, tmpl, ca, key)
}

// makeClient writes a client certificate.
func makeClient(cmd *cobra.Command, f certsFlags) error {
	ca, key, err := loadCA(f.dir)
	if err != nil {
		return err
	}
	return issue(cmd, f, f.name, leafTemplate(f.name, x509.ExtKeyUsageClientAuth), ca, key)
}

func leafTemplate(name string, usage ...x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: usage,
	}
}

// issue makes a key and a certificate from tmpl, signed by ca (self-signed
// when nil), and writes them as NAME.pem and NAME-key.pem into f.dir,
// refusing to overwrite either.
func issue(cmd *cobra.Command, f certsFlags, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	certPath, keyPath := filepath.Join(f.dir, name+".pem"), filepath.Join(f.dir, name+"-key.pem")
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return usageError("%s exists: tenure certs never overwrites a file; remove it to make it again", p)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(f.validFor)
	signer, parent := key, tmpl
	if ca != nil {
		signer, parent = caKey, ca
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	if err := writeNew(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		os.Remove(keyPath)
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s (valid until %s)\n", certPath, keyPath, tmpl.NotAfter.UTC().Format(time.DateOnly))
	return nil
}

// writeNew writes b to a new file at path with mode perm; it fails if the
// file exists.
func writeNew(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return usageError("%s exists: tenure certs never overwrites a file; remove it to make it again", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// loadCA reads the CA that tenure certs ca wrote into dir.
func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, nil, &exitError{code: ExitUsage, err: fmt.Errorf("--dir %s holds no CA: %w (make it with: tenure certs ca --dir %s)", dir, err, dir)}
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return nil, nil, fmt.Errorf("the CA's key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s or its key is not PEM", filepath.Join(dir, "ca.pem"))
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "ca.pem"), err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	key, ok := k.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		return nil, nil, fmt.Errorf("%s: not an ECDSA key that tenure certs wrote (%v)", filepath.Join(dir, "ca-key.pem"), err)
	}
	if !ca.IsCA {
		return nil, nil, fmt.Errorf("%s is not a CA certificate", filepath.Join(dir, "ca.pem"))
	}
	return ca, key, nil
}
