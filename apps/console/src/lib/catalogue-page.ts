import type { ReactNode } from 'react';
import type { QueryKey } from '@tanstack/react-query';
import type { BodyOf, OperationId } from '@svc/client';
import type { AdminFormState } from '../components/AdminForm';
import type { DependantsProps } from '../components/Dependants';
import type { Answer, ConsoleApi } from './api';
import type { FormErrors } from './errors';

/**
 * What a catalogue page (folders, processes, queues, machines, assets, schedules, triggers)
 * declares of its own; components/CataloguePage.tsx renders every one of them the same way.
 * `Create` and `Update` are the client's operation ids, so the bodies the form reads are the
 * request bodies of the OpenAPI document.
 */
export interface Catalogue<Row extends CatalogueRecord, Values extends object, Create extends OperationId, Update extends OperationId> {
  /** the list's own key */
  queryKey: QueryKey;
  /** what a change makes stale: the list (its key or a prefix of it) and the lists that name its records */
  refreshes: QueryKey[];
  /** a list that reads again by itself, every so many milliseconds */
  refetchEvery?: number;
  list(api: ConsoleApi): Promise<Answer<Row[]>>;
  create(api: ConsoleApi, body: BodyOf<Create>): Promise<{ data: Row }>;
  update(api: ConsoleApi, id: string, body: BodyOf<Update>): Promise<{ data: Row }>;
  deactivate(api: ConsoleApi, id: string): Promise<{ data: Row }>;

  texts: CatalogueTexts;
  /** how the texts name a record (a trigger, which has no name, by its queue) */
  label(row: Row): string;
  /** the table's class, which the tests and the styles find it by */
  className: string;
  /** the row's data attribute, e.g. `{ 'data-folder': name }` */
  rowData(row: Row): DataAttributes;
  columns: Array<Column<Row>>;
  /** buttons before "edit", shown to members too */
  actions?(row: Row): ReactNode;
  /** admins' buttons of an active record, before "deactivate" */
  activeActions?(row: Row): ReactNode;
  /** members see no actions column at all (rather than an empty one) */
  adminColumn?: boolean;
  dependants?(row: Row): DependantsProps;
  form: CatalogueFormSpec<Row, Values, Create, Update>;

  /** the line under a list longer than its page */
  moreRows?(shown: number, total: number): string;
  /** the intro is a note on how the list reads (muted, small) rather than what the records are */
  introIsNote?: boolean;
  /** the page's own parts, where they go */
  parts?: { underIntro?: ReactNode; aboveForm?: ReactNode; belowForm?: ReactNode; aboveTable?: ReactNode; dialogs?: ReactNode };
  onNew?(): void;
  /** after a save: the notice to show, or null when the page shows something of its own instead */
  onSaved?(row: Row): string | null;
  onDeactivated?(row: Row): void;
  /** the notice's state, for a page that changes it itself */
  notice?: [string | null, (notice: string | null) => void];
}

export interface CatalogueRecord { id: string; is_active: boolean }

export type DataAttributes = { [attribute: `data-${string}`]: string };

/** The texts of a catalogue page; the functions take the record's label. */
export interface CatalogueTexts {
  title: string;
  intro: string;
  caption: string;
  empty: string;
  newRecord: string;
  createTitle: string;
  editTitle(label: string): string;
  editLabel(label: string): string;
  deactivateLabel(label: string): string;
  deactivateTitle(label: string): string;
  deactivateBody: string;
  deactivated(label: string): string;
  saved(label: string): string;
}

/** A column of the list; the first one is the row's header. */
export interface Column<Row> {
  header: ReactNode;
  cell(row: Row): ReactNode;
  /** a figure: header and cells aligned to the right */
  num?: boolean;
  /** the cells' own class (`wrap`, `small`) */
  className?: string;
  /** the cells' data attributes the tests find them by */
  data?: DataAttributes;
}

export interface CatalogueFormSpec<Row, Values extends object, Create extends OperationId, Update extends OperationId> {
  /** the prefix of the title's id (`folder` → `folder-form-title`) */
  id: string;
  /** the body's top-level fields, which the API's messages are shown next to */
  fields: readonly string[];
  initial(record: Row | null): Values;
  /** the body of a new record, or the errors that keep the values from being sent */
  create(values: Values): Reading<BodyOf<Create>>;
  update(values: Values, record: Row): Reading<BodyOf<Update>>;
  /** the controls, between the form's title (and its errors) and its buttons: a render, not a component, so the page's own reads are at hand */
  controls(props: FieldsProps<Row, Values>): ReactNode;
}

export interface FieldsProps<Row, Values extends object> {
  record: Row | null;
  form: AdminFormState<Values>;
}

export type Reading<Body> = { body: Body } | { errors: FormErrors };
