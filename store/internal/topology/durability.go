package topology

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// ReadDurability reads the durability settings on a connection of pool in
// one transaction and judges them (pgsql.DurabilitySettings.Judge).
func ReadDurability(ctx context.Context, pool *pgxpool.Pool) (store.Durability, error) {
	var p pgsql.DurabilitySettings
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, pgsql.DurabilityQuery).Scan(&p.Fsync, &p.FullPageWrites, &p.SyncCommit,
			&p.StandbyNames, &p.WalWriterDelay, &p.Role, &p.CanSeeStandbys); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, pgsql.StandbysQuery)
		var s pgsql.Standby
		_, err := pgx.ForEachRow(rows, []any{&s.Name, &s.Addr, &s.SyncState}, func() error {
			p.Standbys = append(p.Standbys, s)
			return nil
		})
		return err
	})
	if err != nil {
		return store.Durability{}, fmt.Errorf("pgstore: reading the durability settings: %w", err)
	}
	return p.Judge(), nil
}
