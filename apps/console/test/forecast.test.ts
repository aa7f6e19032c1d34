import { es } from '../src/i18n/es';
import { forecastSentence, type Forecast } from '../src/lib/forecast';

const NOW = new Date('2026-12-02T13:05:00Z');
const base: Forecast = { handling_seconds_p50: 60, consumers: 2, ready_items: 40, examined_items: 40, drain_at: '2026-12-02T13:20:00Z', late_items: 0, machines_needed: null };
const say = (f: Partial<Forecast>) => forecastSentence({ ...base, ...f }, es.forecast, 'es', NOW, 'Europe/Madrid');

/** The queue page's forecast sentence, in Spanish, in each case the stats can answer. */
describe('the deadline forecast as a sentence', () => {
  it('says when the queue ends, how many would be late and how many machines would make them', () => {
    expect(say({ late_items: 12, machines_needed: 3 })).toBe('A este ritmo la cola termina a las 14:20; 12 elementos llegarían tarde; harían falta 3 máquinas.');
    expect(say({ late_items: 1, machines_needed: 1, consumers: 0, drain_at: null })).toBe('Ninguna máquina puede consumir la cola ahora; 1 elemento llegaría tarde; haría falta 1 máquina.');
  });

  it('says when nothing is late, and says nothing of deadlines when no item has one', () => {
    expect(say({ late_items: 0, machines_needed: 1 })).toBe('A este ritmo la cola termina a las 14:20; todos los elementos con plazo llegan a tiempo.');
    expect(say({})).toBe('A este ritmo la cola termina a las 14:20.');
  });

  it('names the day when the queue ends another day, and the items read when capped', () => {
    expect(say({ drain_at: '2026-12-03T08:10:00Z' })).toBe('A este ritmo la cola termina a las 09:10 del 3 dic 2026.');
    expect(say({ ready_items: 200_000, examined_items: 2_000, late_items: 1_500, machines_needed: 40 }))
      .toBe('A este ritmo la cola termina a las 14:20; 1500 elementos llegarían tarde (de los primeros 2000 en orden de toma); harían falta 40 máquinas.');
  });

  it('says no machine helps when the late items are due sooner than one item takes', () => {
    expect(say({ late_items: 2, machines_needed: 2 })).toBe('A este ritmo la cola termina a las 14:20; 2 elementos llegarían tarde; ni con más máquinas llegarían a tiempo.');
    expect(say({ late_items: 2, machines_needed: null })).toContain('ni con más máquinas');
  });

  it('has nothing to forecast without ready items or without history', () => {
    expect(say({ ready_items: 0 })).toBe('No hay elementos listos: nada que pronosticar.');
    expect(say({ handling_seconds_p50: null, drain_at: null, late_items: null })).toBe('Ningún elemento se completó en la última hora: sin ese ritmo no hay pronóstico.');
  });
});
